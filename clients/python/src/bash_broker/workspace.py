"""The workspace API: one long-lived bash in a terminal that an agent and people share (README,
"Workspace API"). ``broker.workspace()`` is the default one; ``broker.new_workspace()`` creates a
named one and ends it when its block ends."""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Type, Union
from urllib.parse import quote, urlencode

if TYPE_CHECKING:
    from .broker import Broker

#: How long the broker may hold an execute's answer (`wait`, at most 30 s), plus a margin.
_EXECUTE_MARGIN_S = 10.0


@dataclass(frozen=True)
class Job:
    """``POST /api/execute``'s answer: ``returncode`` is None while the job still runs (its output
    goes on in the event stream, ``logs()``)."""

    job_id: str
    command: str
    returncode: Optional[int]
    stdout: str

    @property
    def running(self) -> bool:
        return self.returncode is None


@dataclass(frozen=True)
class WorkspaceFile:
    filename: str
    path: str
    size: int
    content: bytes


class Workspace:
    """One workspace. ``id`` None is the default workspace (the root paths)."""

    def __init__(self, broker: "Broker", workspace_id: Optional[str] = None, workdir: Optional[str] = None) -> None:
        self._broker = broker
        self.id = workspace_id
        self.workdir = workdir
        self._prefix = "" if workspace_id is None else f"/workspaces/{quote(workspace_id, safe='')}"

    def __repr__(self) -> str:
        return f"Workspace({self.id or 'default'!r})"

    async def execute(self, command: str, *, wait: Optional[float] = None) -> Job:
        """Types ``command`` into the terminal; answers when it ends or after ``wait`` seconds
        (default 5, at most 30). Raises WorkspaceBusyError (409, with ``job_id``) while a job runs."""
        body: Dict[str, Any] = {"command": command}
        if wait is not None:
            body["wait"] = wait
        bound = (wait if wait is not None else 5.0) + _EXECUTE_MARGIN_S
        _, answer = await self._call("POST", "/api/execute", body, bound)
        return Job(job_id=answer["job_id"], command=answer["command"], returncode=answer["returncode"], stdout=answer["stdout"])

    async def interrupt(self) -> Optional[str]:
        """^C to the terminal; the running job's id, or None."""
        _, answer = await self._call("POST", "/api/interrupt", {})
        job_id = answer.get("job_id")
        return job_id if isinstance(job_id, str) else None

    async def input(self, text: str) -> None:
        """Keys as they are (``"yes\\r"`` answers a prompt)."""
        await self._call("POST", "/api/input", {"text": text})

    async def logs(self, *, offset: int = 0, limit: int = 100) -> List[Mapping[str, Any]]:
        """Events from ``offset`` (negative: from the tail), at most ``limit`` (1 to 1000)."""
        _, events = await self._call("GET", "/api/workspace/logs?" + urlencode({"offset": offset, "limit": limit}), None)
        return list(events)

    async def write_file(self, filename: str, content: Union[str, bytes]) -> int:
        """Creates or overwrites a file (parents made), relative to the workspace directory; bytes written."""
        raw = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        body = {"filename": filename, "content": base64.b64encode(raw).decode("ascii"), "encoding": "base64"}
        _, answer = await self._call("POST", "/api/write", body)
        return int(answer["bytes_written"])

    async def read_file(self, filename: str) -> WorkspaceFile:
        _, answer = await self._call("GET", "/api/read?" + urlencode({"filename": filename}), None)
        content = answer["content"]
        raw = base64.b64decode(content) if answer["encoding"] == "base64" else content.encode("utf-8")
        return WorkspaceFile(filename=answer["filename"], path=answer["path"], size=int(answer["size"]), content=raw)

    async def end(self) -> None:
        """Ends a named workspace and gives its slot back to the pool (the default one stays)."""
        if self.id is not None:
            await self._broker.request("DELETE", self._prefix, None, timeout=self._broker.timeouts.request)

    async def _call(self, method: str, path: str, body: Optional[Any], timeout: Optional[float] = None) -> Any:
        return await self._broker.request(method, self._prefix + path, body, timeout=timeout or self._broker.timeouts.request)


class NewWorkspace:
    """``async with broker.new_workspace() as ws``: created on entry, ended on exit (also on cancellation)."""

    def __init__(self, broker: "Broker") -> None:
        self._broker = broker
        self._workspace: Optional[Workspace] = None

    async def __aenter__(self) -> Workspace:
        self._workspace = await self._broker.create_workspace()
        return self._workspace

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        if self._workspace is not None:
            await asyncio.shield(asyncio.ensure_future(self._workspace.end()))
