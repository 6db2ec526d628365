"""503s are retried with the broker's Retry-After; one keep-alive connection serves many calls."""

from __future__ import annotations

import asyncio
from typing import List, Tuple

import aiohttp

from bash_broker import Broker, RetryPolicy, ServiceUnavailableError

from conftest import TOKEN, URL, hold_all, wait_all_available


async def test_a_503_acquire_is_retried_after_retry_after_and_then_served() -> None:
    retries: List[Tuple[int, str, float]] = []
    holders: list = []

    def on_retry(attempt: int, err: ServiceUnavailableError, delay: float) -> None:
        retries.append((attempt, err.code or "", delay))
        if attempt == 1:  # a session frees up while the client waits to retry
            asyncio.ensure_future(holders.pop().release())

    async with Broker(URL, token=TOKEN, retry=RetryPolicy(attempts=4, on_retry=on_retry)) as broker:
        holders.extend(await hold_all(broker))
        try:
            async with broker.session() as s:
                assert (await s.execute("echo served")).stdout == "served\n"
        finally:
            for h in holders:
                await h.release()
        # Retry-After: 1 from the broker, taken as the delay (not the policy's own backoff).
        assert retries[0] == (1, "pool_exhausted", 1.0)
        await wait_all_available(broker)


async def test_backoff_without_retry_after_is_exponential_and_capped() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=3.0)
    err = ServiceUnavailableError("x", status=503, code="shutting_down", retry_after=None)
    for attempt in range(1, 8):
        assert 0 <= policy.delay(attempt, err) <= min(3.0, 0.5 * 2 ** (attempt - 1))
    assert policy.delay(1, ServiceUnavailableError("x", retry_after=120)) == 3.0


async def test_calls_reuse_one_connection() -> None:
    created: List[object] = []
    reused: List[object] = []
    trace = aiohttp.TraceConfig()

    async def on_create(_session: object, _ctx: object, params: object) -> None:
        created.append(params)

    async def on_reuse(_session: object, _ctx: object, params: object) -> None:
        reused.append(params)

    trace.on_connection_create_end.append(on_create)
    trace.on_connection_reuseconn.append(on_reuse)
    async with Broker(URL, token=TOKEN, trace_configs=[trace]) as broker:
        for _ in range(3):
            async with broker.session() as s:
                for i in range(5):
                    assert (await s.execute(f"echo {i}")).stdout == f"{i}\n"
    # 3 acquires + 15 executes + 3 releases, one after the other: one connection.
    assert len(created) == 1
    assert len(reused) == 20
