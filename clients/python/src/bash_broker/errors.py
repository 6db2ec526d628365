"""One exception class per broker error, and ONE table from the wire's ``code`` (or status) to it.

Every error the broker sends is ``{"detail": "<for humans>", "code": "<for programs>"}``; the
exception carries both, with the HTTP status.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type


class BrokerError(Exception):
    """Any error answered by the broker (or on the way to it)."""

    def __init__(self, detail: str, *, status: Optional[int] = None, code: Optional[str] = None,
                 body: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(detail if status is None else f"{status} {code or ''}: {detail}".replace(" :", ":"))
        self.detail = detail
        self.status = status
        self.code = code
        self.body: Mapping[str, Any] = body or {}


class BadRequestError(BrokerError):
    """400: the request was malformed (a bad path in ``files``, a timeout out of range, ...)."""


class PayloadTooLargeError(BadRequestError):
    """413: the body or a command is over the broker's caps."""


class SessionNotInUseError(BadRequestError):
    """400 session_not_in_use: the lease ended (released, or reclaimed after being idle)."""


class UnauthorizedError(BrokerError):
    """401: the broker has a token and this client sent none, or a wrong one."""


class NotFoundError(BrokerError):
    """404: no such session (an id the broker never issued)."""


class SessionBusyError(BrokerError):
    """409: another execute is running on this session."""


class WorkspaceBusyError(BrokerError):
    """409 workspace_busy: a job runs in the workspace; ``job_id`` names it (wait for it or interrupt it)."""

    @property
    def job_id(self) -> Optional[str]:
        job_id = self.body.get("job_id")
        return job_id if isinstance(job_id, str) else None


class ForbiddenError(BrokerError):
    """403: a workspace file path that leaves the workspace directory."""


class SessionBrokenError(BrokerError):
    """410: the session's shell died or could not be recovered; its state is lost. Acquire a new one."""


class StartupFailedError(BrokerError):
    """422: a startup command killed its shell; no session was leased."""


class ServiceUnavailableError(BrokerError):
    """503: the broker could not serve the request now (shutting down, no healthy session); retryable."""

    def __init__(self, detail: str, *, retry_after: Optional[float] = None, **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        #: Seconds the broker asked to wait before trying again (its Retry-After), if it said.
        self.retry_after = retry_after


class PoolExhaustedError(ServiceUnavailableError):
    """503 pool_exhausted: no session became free within the broker's acquire timeout."""


class BrokerTimeoutError(BrokerError, TimeoutError):
    """The client's own bound (Timeouts) passed before the broker answered."""


class BrokerConnectionError(BrokerError, ConnectionError):
    """The broker could not be reached, or the connection broke before an answer."""


_BY_CODE: Dict[str, Type[BrokerError]] = {
    "bad_request": BadRequestError,
    "payload_too_large": PayloadTooLargeError,
    "session_not_in_use": SessionNotInUseError,
    "unauthorized": UnauthorizedError,
    "session_not_found": NotFoundError,
    "session_busy": SessionBusyError,
    "workspace_busy": WorkspaceBusyError,
    "forbidden": ForbiddenError,
    "session_broken": SessionBrokenError,
    "startup_failed": StartupFailedError,
    "pool_exhausted": PoolExhaustedError,
    "session_unavailable": ServiceUnavailableError,
    "shutting_down": ServiceUnavailableError,
}

_BY_STATUS: Dict[int, Type[BrokerError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: SessionBusyError,
    410: SessionBrokenError,
    413: PayloadTooLargeError,
    422: StartupFailedError,
    503: ServiceUnavailableError,
}


def error_from_response(status: int, body: Any, text: str, retry_after: Optional[float]) -> BrokerError:
    """The exception for an error answer: by its ``code`` first, else by its status."""
    mapping: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
    # The pool API says `detail`; execd (OpenSandbox's envelope) says `message`.
    raw_code, raw_detail = mapping.get("code"), mapping.get("detail", mapping.get("message"))
    code = raw_code if isinstance(raw_code, str) else None
    detail = raw_detail if isinstance(raw_detail, str) else (text.strip() or f"HTTP {status}")
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status, BrokerError)
    if issubclass(cls, ServiceUnavailableError):
        return cls(detail, status=status, code=code, body=mapping, retry_after=retry_after)
    return cls(detail, status=status, code=code, body=mapping)
