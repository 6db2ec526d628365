"""64 concurrent episodes through one client: more episodes than sessions, so most wait in the queue."""

from __future__ import annotations

import asyncio

from bash_broker import Broker, RetryPolicy

from conftest import TOKEN, URL, wait_all_available

EPISODES = 64


async def episode(broker: Broker, n: int) -> str:
    async with broker.session(files={"task.txt": f"task {n}\n"}, startup_commands=[f"export N={n}"]) as s:
        await s.execute("cat task.txt > seen; echo $N >> seen; cd /tmp/s/$(basename $PWD)")
        r = await s.execute("cat seen; echo $((N * 2))")
        assert r.ok, r
        return r.stdout


async def test_64_concurrent_episodes() -> None:
    # A queue wait longer than the broker's acquire timeout answers 503: retried, as a rollout would.
    async with Broker(URL, token=TOKEN, retry=RetryPolicy(attempts=20, max_delay=2)) as broker:
        await wait_all_available(broker)
        outputs = await asyncio.gather(*(episode(broker, n) for n in range(EPISODES)))
        assert outputs == [f"task {n}\n{n}\n{n * 2}\n" for n in range(EPISODES)]
        await wait_all_available(broker)
        health = await broker.health()
        assert health.in_use_sessions == 0 and health.broken_sessions == 0
