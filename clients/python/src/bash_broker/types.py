"""What the broker answers, as typed values, and the client's timeouts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional


@dataclass(frozen=True)
class ExecuteResult:
    """One command's answer. ``status`` is ``"Success"`` iff ``return_code`` is 0; a command killed
    at its timeout answers ``return_code`` -1 with the output so far (the session keeps its state)."""

    status: Literal["Success", "Failed"]
    stdout: str
    stderr: str
    return_code: int
    #: A stream went past the broker's output cap: its head and tail are kept.
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.return_code == 0

    @property
    def timed_out(self) -> bool:
        return self.return_code == -1 and "Command timed out after" in self.stderr

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "ExecuteResult":
        return cls(
            status=body["status"],
            stdout=body["stdout"],
            stderr=body["stderr"],
            return_code=int(body["return_code"]),
            truncated=bool(body.get("truncated", False)),
        )


@dataclass(frozen=True)
class Health:
    """``GET /health``. ``warmup`` is present only while the pool's first fill runs."""

    status: Literal["healthy", "degraded", "unhealthy"]
    total_sessions: int
    available_sessions: int
    in_use_sessions: int
    cleaning_sessions: int
    broken_sessions: int
    healthy_containers: int
    unhealthy_containers: int
    warmup: Optional[Mapping[str, Any]] = None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Health":
        return cls(
            status=body["status"],
            total_sessions=body["total_sessions"],
            available_sessions=body["available_sessions"],
            in_use_sessions=body["in_use_sessions"],
            cleaning_sessions=body["cleaning_sessions"],
            broken_sessions=body["broken_sessions"],
            healthy_containers=body["healthy_containers"],
            unhealthy_containers=body["unhealthy_containers"],
            warmup=body.get("warmup"),
        )


@dataclass(frozen=True)
class Timeouts:
    """Client-side bounds, in seconds (None: no bound).

    The broker bounds a command by the ``timeout`` sent with it; ``execute_margin`` is what the
    client allows beyond that for the answer to arrive. An acquire waits in the broker's queue up to
    its BROKER_ACQUIRE_TIMEOUT (120 s by default): ``acquire`` should be longer.
    """

    connect: Optional[float] = 10.0
    acquire: Optional[float] = 180.0
    execute_margin: float = 30.0
    #: release, health and other short calls.
    request: Optional[float] = 30.0
    #: The ``timeout`` sent with an execute that names none (the broker's own default is 30 s).
    default_command: Optional[float] = None
