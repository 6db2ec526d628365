"""The broker: one aiohttp connection pool (reused by every call), timeouts, 503 retries, leases."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from typing import Any, Dict, Iterable, Mapping, Optional, Set, Tuple, Union

import aiohttp

from .errors import BrokerConnectionError, BrokerError, BrokerTimeoutError, ServiceUnavailableError, error_from_response
from .retry import NO_RETRY, RetryPolicy, parse_retry_after
from .session import Session, SessionContext
from .types import ExecuteResult, Health, Timeouts
from .workspace import NewWorkspace, Workspace

log = logging.getLogger("bash_broker")

FileContent = Union[bytes, str]


class Broker:
    """A client of one broker. Use it as an async context manager (or call ``close()``): it owns a
    pool of keep-alive connections shared by every session and call, so thousands of episodes
    do not open thousands of connections.

    ``token``: the broker's BROKER_TOKEN, sent as ``Authorization: Bearer``. ``http``: an aiohttp
    session of your own to use instead (it is not closed by ``close()``).
    """

    def __init__(
        self,
        url: str,
        *,
        token: Optional[str] = None,
        timeouts: Timeouts = Timeouts(),
        retry: RetryPolicy = RetryPolicy(),
        max_connections: int = 256,
        http: Optional[aiohttp.ClientSession] = None,
        trace_configs: Optional[Iterable[aiohttp.TraceConfig]] = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeouts = timeouts
        self.retry = retry
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._max_connections = max_connections
        self._http = http
        self._own_http = http is None
        self._trace_configs = list(trace_configs or [])
        #: Releases still under way (from a cancelled episode): close() waits for them.
        self._releases: Set["asyncio.Task[None]"] = set()

    async def __aenter__(self) -> "Broker":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Waits for releases still under way, then closes the connections (if this client made them)."""
        if self._releases:
            await asyncio.gather(*self._releases, return_exceptions=True)
        if self._own_http and self._http is not None and not self._http.closed:
            await self._http.close()

    def session(
        self,
        *,
        files: Optional[Mapping[str, FileContent]] = None,
        startup_commands: Iterable[str] = (),
    ) -> SessionContext:
        """``async with broker.session(...) as s``: acquires a session (waiting in the broker's queue
        for a free one, retrying a 503), and releases it when the block ends: normally, on an
        exception, or on cancellation. ``files`` maps relative paths to bytes or text, written into
        the session's working directory before ``startup_commands`` run in it."""
        return SessionContext(self, files or {}, list(startup_commands))

    async def acquire(
        self,
        *,
        files: Optional[Mapping[str, FileContent]] = None,
        startup_commands: Iterable[str] = (),
    ) -> Session:
        """Leases a session; the caller must ``release()`` it (``session()`` does that for you)."""
        body: Dict[str, Any] = {}
        if files:
            body["files"] = {path: _b64(content) for path, content in files.items()}
        commands = list(startup_commands)
        if commands:
            body["startup_commands"] = commands
        _, answer = await self.request("POST", "/session/acquire", body, timeout=self.timeouts.acquire, retry=self.retry)
        results = [ExecuteResult.from_json(r) for r in answer.get("startup_results", [])]
        return Session(self, answer["session_id"], results)

    def workspace(self, workspace_id: Optional[str] = None) -> Workspace:
        """A workspace by id; None: the default one (created by the broker on first use)."""
        return Workspace(self, workspace_id)

    async def create_workspace(self) -> Workspace:
        """A new named workspace (it holds one pool slot until ``end()``)."""
        _, answer = await self.request("POST", "/workspaces", {}, timeout=self.timeouts.acquire, retry=self.retry)
        return Workspace(self, answer["workspace_id"], answer.get("workdir"))

    def new_workspace(self) -> NewWorkspace:
        """``async with broker.new_workspace() as ws``: a named workspace for the block's length."""
        return NewWorkspace(self)

    async def health(self) -> Health:
        """``GET /health`` (answered 503 when the broker is unhealthy: that is a Health too)."""
        _, body = await self.request("GET", "/health", None, timeout=self.timeouts.request, retry=NO_RETRY, ok_statuses=(503,))
        return Health.from_json(body)

    async def request(
        self,
        method: str,
        path: str,
        body: Optional[Any],
        *,
        timeout: Optional[float],
        retry: RetryPolicy = NO_RETRY,
        ok_statuses: Tuple[int, ...] = (),
    ) -> Tuple[int, Any]:
        """One call to the broker: (status, JSON body). Error answers raise the error's class;
        a 503 is sent again as ``retry`` says. For the API classes built on this client."""
        attempt = 1
        while True:
            try:
                return await self._send(method, path, body, timeout, ok_statuses)
            except ServiceUnavailableError as err:
                if attempt >= retry.attempts:
                    raise
                delay = retry.delay(attempt, err)
                if retry.on_retry is not None:
                    retry.on_retry(attempt, err, delay)
                log.info("%s %s answered %s; retrying in %.2f s (attempt %d of %d)", method, path, err.code, delay, attempt + 1, retry.attempts)
                await asyncio.sleep(delay)
                attempt += 1

    async def _send(self, method: str, path: str, body: Optional[Any], timeout: Optional[float], ok_statuses: Tuple[int, ...]) -> Tuple[int, Any]:
        client_timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=self.timeouts.connect)
        try:
            async with self._client().request(method, self.url + path, json=body, timeout=client_timeout) as resp:
                text = await resp.text()
                parsed = _json(text)
                if resp.status < 400 or resp.status in ok_statuses:
                    if not isinstance(parsed, (dict, list)):
                        raise BrokerError(f"{method} {path}: expected JSON, got {text[:200]!r}", status=resp.status)
                    return resp.status, parsed
                raise error_from_response(resp.status, parsed, text, parse_retry_after(resp.headers.get("Retry-After")))
        except asyncio.TimeoutError as err:
            # aiohttp's own timeouts are ClientErrors too: this catch comes first.
            raise BrokerTimeoutError(f"{method} {path}: no answer within {timeout} s") from err
        except aiohttp.ClientError as err:
            raise BrokerConnectionError(f"{method} {path}: {type(err).__name__}: {err}") from err

    def _client(self) -> aiohttp.ClientSession:
        if self._http is None or (self._own_http and self._http.closed):
            connector = aiohttp.TCPConnector(limit=self._max_connections, keepalive_timeout=60)
            self._http = aiohttp.ClientSession(connector=connector, headers=self._headers, trace_configs=self._trace_configs)
        return self._http

    def _release_later(self, session_id: str) -> "asyncio.Task[None]":
        """Releases in a task of its own, which a cancellation of the caller cannot stop."""
        task = asyncio.ensure_future(self._release_quietly(session_id))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)
        return task

    async def _release_quietly(self, session_id: str) -> None:
        try:
            await self.request("POST", f"/session/{session_id}/release", None, timeout=self.timeouts.request)
        except BrokerError as err:
            # The broker reclaims a lease nobody calls after its idle timeout: nothing is lost for good.
            log.warning("could not release session %s: %s", session_id, err)


def _b64(content: FileContent) -> str:
    raw = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    return base64.b64encode(raw).decode("ascii")


def _json(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None
