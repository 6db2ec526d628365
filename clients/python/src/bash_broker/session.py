"""A leased session, and the context manager that releases it whatever happens."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Type

from .errors import SessionBrokenError
from .execd import Execd
from .types import ExecuteResult

if TYPE_CHECKING:
    from .broker import Broker, FileContent


class Session:
    """One lease of a bash session: state (cwd, variables, functions) persists across ``execute``
    calls until ``release()``."""

    def __init__(self, broker: "Broker", session_id: str, startup_results: List[ExecuteResult]) -> None:
        self._broker = broker
        self.id = session_id
        #: One result per startup command (a non-zero status is reported, not raised).
        self.startup_results = startup_results
        self.released = False

    def __repr__(self) -> str:
        return f"Session({self.id!r}{', released' if self.released else ''})"

    @property
    def execd(self) -> Execd:
        """This session's execd API: one-off commands beside its shell, and its files."""
        return Execd(self._broker, self.id)

    async def execute(self, command: str, *, timeout: Optional[float] = None, release: bool = False) -> ExecuteResult:
        """Runs ``command`` in the session. ``timeout`` (seconds) is the broker's: past it the command
        is killed and the result says so (``return_code`` -1); the session goes on. Never retried:
        a command may have run. Raises SessionBrokenError (410) when the shell died.

        ``release=True`` makes this the lease's last command: the broker releases the session once
        the command ran (also when it answers 410), in the same request, so an episode saves the
        release's round trip; ``released`` is then true and the context manager sends no release."""
        timeouts = self._broker.timeouts
        command_timeout = timeout if timeout is not None else timeouts.default_command
        body: Dict[str, Any] = {"command": command}
        if command_timeout is not None:
            body["timeout"] = command_timeout
        if release:
            body["release"] = True
        # The broker's own default is 30 s; the client waits for the answer a margin beyond it.
        bound = (command_timeout if command_timeout is not None else 30.0) + timeouts.execute_margin
        try:
            _, answer = await self._broker.request("POST", f"/session/{self.id}/execute", body, timeout=bound)
        except SessionBrokenError:
            if release:
                self.released = True
            raise
        if release:
            self.released = True
        return ExecuteResult.from_json(answer)

    async def release(self) -> None:
        """Gives the session back (idempotent; the broker cleans it in the background)."""
        if self.released:
            return
        await self._broker.request("POST", f"/session/{self.id}/release", None, timeout=self._broker.timeouts.request)
        self.released = True


class SessionContext:
    """``async with broker.session(...) as s``. The release runs in a task of its own, so that it
    completes even when the episode was cancelled (and cancelled again while releasing); an acquire
    cancelled in flight releases the session it may still get."""

    def __init__(self, broker: "Broker", files: Mapping[str, "FileContent"], startup_commands: List[str]) -> None:
        self._broker = broker
        self._files = files
        self._startup_commands = startup_commands
        self._session: Optional[Session] = None

    async def __aenter__(self) -> Session:
        acquiring = asyncio.ensure_future(self._broker.acquire(files=self._files, startup_commands=self._startup_commands))
        try:
            self._session = await asyncio.shield(acquiring)
        except asyncio.CancelledError:
            # Closing its connection takes the acquire out of the broker's queue; one already served
            # is released once its answer is in.
            acquiring.cancel()
            acquiring.add_done_callback(self._release_if_acquired)
            raise
        return self._session

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        session = self._session
        if session is None or session.released:
            return
        session.released = True
        # Waited for, so the session is back when the block is left. Its errors are logged, not
        # raised (the episode's results are in; the broker reclaims an unreleased lease after its idle
        # timeout); a second cancellation stops the wait, not the release.
        await asyncio.shield(self._broker._release_later(session.id))

    def _release_if_acquired(self, acquiring: "asyncio.Future[Session]") -> None:
        if not acquiring.cancelled() and acquiring.exception() is None:
            session = acquiring.result()
            session.released = True
            self._broker._release_later(session.id)
