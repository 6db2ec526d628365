"""Async client of the bash-session broker: a pool of warm, stateful bash sessions leased over HTTP.

    async with Broker("http://localhost:8180") as broker:
        async with broker.session(files={"a.py": "print(1)"}) as s:
            r = await s.execute("python3 a.py")
"""

from .broker import Broker
from .errors import (
    BadRequestError,
    BrokerConnectionError,
    BrokerError,
    BrokerTimeoutError,
    ForbiddenError,
    NotFoundError,
    PayloadTooLargeError,
    PoolExhaustedError,
    ServiceUnavailableError,
    SessionBrokenError,
    SessionBusyError,
    SessionNotInUseError,
    StartupFailedError,
    UnauthorizedError,
    WorkspaceBusyError,
)
from .execd import CommandResult, Execd
from .retry import RetryPolicy
from .session import Session
from .types import ExecuteResult, Health, Timeouts
from .workspace import Job, Workspace, WorkspaceFile

__version__ = "0.1.0"

__all__ = [
    "BadRequestError",
    "Broker",
    "BrokerConnectionError",
    "BrokerError",
    "BrokerTimeoutError",
    "CommandResult",
    "Execd",
    "ExecuteResult",
    "ForbiddenError",
    "Job",
    "Health",
    "NotFoundError",
    "PayloadTooLargeError",
    "PoolExhaustedError",
    "RetryPolicy",
    "ServiceUnavailableError",
    "Session",
    "SessionBrokenError",
    "SessionBusyError",
    "SessionNotInUseError",
    "StartupFailedError",
    "Timeouts",
    "UnauthorizedError",
    "Workspace",
    "WorkspaceBusyError",
    "WorkspaceFile",
    "__version__",
]
