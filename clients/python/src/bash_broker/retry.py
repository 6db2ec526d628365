"""Retries of 503 answers: exponential backoff with jitter, or the broker's Retry-After when it says."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional

from .errors import ServiceUnavailableError


@dataclass(frozen=True)
class RetryPolicy:
    """How a request answered 503 is sent again. Only requests the broker did nothing for are
    retried: an acquire (a 503 acquire holds no session) and health; never an execute.

    The delay before attempt n+1 is the broker's ``Retry-After`` when it sent one, else
    ``base_delay * 2**(n-1)`` with full jitter; either is capped at ``max_delay``.
    """

    #: Attempts in all (1: no retry).
    attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    #: Called before each retry with (attempt that failed, its error, the delay chosen): for logs.
    on_retry: Optional[Callable[[int, ServiceUnavailableError, float], None]] = None

    def delay(self, attempt: int, error: ServiceUnavailableError) -> float:
        if error.retry_after is not None:
            return min(self.max_delay, max(0.0, error.retry_after))
        return min(self.max_delay, random.uniform(0, self.base_delay * 2 ** (attempt - 1)))


NO_RETRY = RetryPolicy(attempts=1)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After in seconds (the HTTP-date form is not used by the broker and is ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
