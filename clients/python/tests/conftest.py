"""The broker under test comes from the environment (test/pool/pythonClient.test.ts starts one on
port 0 and runs pytest with these set): BROKER_URL, BROKER_TOKEN, BROKER_ACQUIRE_TIMEOUT (seconds)."""

from __future__ import annotations

import asyncio
import os
from typing import AsyncIterator, Awaitable, Callable, List

import aiohttp
import pytest

from bash_broker import Broker, Session

URL = os.environ.get("BROKER_URL", "")
TOKEN = os.environ.get("BROKER_TOKEN") or None
ACQUIRE_TIMEOUT_S = float(os.environ.get("BROKER_ACQUIRE_TIMEOUT", "2"))

if not URL:
    raise pytest.UsageError("BROKER_URL is not set: these tests need a live broker (npm test runs them through test/pool/pythonClient.test.ts)")


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker(URL, token=TOKEN) as b:
        yield b


async def eventually(probe: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 30.0) -> None:
    """Waits on a state (never on a time): polls `probe` until it is true, failing after a generous bound."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        if await probe():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


async def wait_all_available(broker: Broker) -> None:
    async def full() -> bool:
        h = await broker.health()
        return h.status == "healthy" and h.available_sessions == h.total_sessions

    await eventually(full, "every session available")


async def hold_all(broker: Broker) -> List[Session]:
    """Leases every session of the pool (so the next acquire has to wait)."""
    await wait_all_available(broker)
    total = (await broker.health()).total_sessions
    return list(await asyncio.gather(*(broker.acquire() for _ in range(total))))


async def acquire_waiting() -> float:
    """broker_acquire_waiting from /metrics (Prometheus text, read with plain aiohttp)."""
    headers = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.get(f"{URL}/metrics") as resp:
            assert resp.status == 200, await resp.text()
            for line in (await resp.text()).splitlines():
                if line.startswith("broker_acquire_waiting "):
                    return float(line.split()[1])
    raise AssertionError("no broker_acquire_waiting in /metrics")
