"""A session's execd API (OpenSandbox's, under ``/sandboxes/{session_id}/execd``): one-off commands
that leave the session's shell alone, and files by absolute or session-relative path."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional
from urllib.parse import quote

import aiohttp

from .errors import BrokerConnectionError, error_from_response
from .retry import parse_retry_after

if TYPE_CHECKING:
    from .broker import Broker, FileContent


@dataclass(frozen=True)
class CommandResult:
    """A finished ``/command``: its output lines joined back (each ends with a newline), its exit code."""

    command_id: str
    stdout: str
    stderr: str
    exit_code: int


class Execd:
    """The execd routes of one leased session (or lifecycle sandbox). Every call is a request of its
    own over the broker's connection pool; the session's stateful shell is not touched."""

    def __init__(self, broker: "Broker", sandbox_id: str) -> None:
        self._broker = broker
        self.base = f"/sandboxes/{quote(sandbox_id, safe='')}/execd"

    async def ping(self) -> None:
        # Its answer is JSON `null`, as OpenSandbox's execd sends: read raw, not as an object.
        await self._raw("GET", "/ping")

    async def run(self, command: str, *, cwd: Optional[str] = None, envs: Optional[Mapping[str, str]] = None, timeout_ms: Optional[int] = None) -> CommandResult:
        """Runs ``command`` in a fresh process of the sandbox and waits for its end. A failing command
        is a result with its exit code, not an exception; a timeout kills its whole process tree."""
        body: Dict[str, Any] = {"command": command}
        if cwd is not None:
            body["cwd"] = cwd
        if envs:
            body["envs"] = dict(envs)
        if timeout_ms is not None:
            body["timeout"] = timeout_ms
        events = await self._stream("POST", "/command", body)
        command_id, exit_code = "", 0
        out: List[str] = []
        err: List[str] = []
        for event in events:
            kind = event.get("type")
            if kind == "init":
                command_id = str(event.get("text", ""))
            elif kind == "stdout":
                out.append(f"{event.get('text', '')}\n")
            elif kind == "stderr":
                err.append(f"{event.get('text', '')}\n")
            elif kind == "error":
                # A command that exits non-zero ends with an error event whose value is its status.
                value = (event.get("error") or {}).get("evalue")
                exit_code = int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else -1
        return CommandResult(command_id, "".join(out), "".join(err), exit_code)

    async def write_file(self, path: str, content: "FileContent", *, mode: Optional[int] = None) -> None:
        """Writes a whole file (parents made). ``mode`` is OpenSandbox's: octal digits as an integer (644)."""
        raw = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        metadata: Dict[str, Any] = {"path": path}
        if mode is not None:
            metadata["mode"] = mode
        form = aiohttp.FormData()
        form.add_field("metadata", json.dumps(metadata), content_type="application/json")
        form.add_field("file", raw, filename="file", content_type="application/octet-stream")
        await self._raw("POST", "/files/upload", data=form)

    async def read_file(self, path: str) -> bytes:
        return await self._raw("GET", f"/files/download?path={quote(path, safe='')}")

    async def _stream(self, method: str, route: str, body: Any) -> List[Dict[str, Any]]:
        raw = await self._raw(method, route, json_body=body, timeout=None)
        events: List[Dict[str, Any]] = []
        for line in raw.decode("utf-8", "replace").split("\n"):
            if line.startswith("data:"):
                parsed = json.loads(line[5:].strip())
                if isinstance(parsed, dict):
                    events.append(parsed)
        return events

    async def _raw(self, method: str, route: str, *, json_body: Any = None, data: Any = None, timeout: Optional[float] = -1.0) -> bytes:
        broker = self._broker
        total = broker.timeouts.request if timeout == -1.0 else timeout
        client_timeout = aiohttp.ClientTimeout(total=total, sock_connect=broker.timeouts.connect)
        try:
            async with broker._client().request(method, broker.url + self.base + route, json=json_body, data=data, timeout=client_timeout) as resp:
                payload = await resp.read()
                if resp.status >= 400:
                    text = payload.decode("utf-8", "replace")
                    try:
                        parsed = json.loads(text)
                    except ValueError:
                        parsed = None
                    raise error_from_response(resp.status, parsed, text, parse_retry_after(resp.headers.get("Retry-After")))
                return payload
        except aiohttp.ClientError as err:
            raise BrokerConnectionError(f"{method} {self.base}{route}: {type(err).__name__}: {err}") from err
