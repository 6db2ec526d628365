"""Sessions: state within a lease, files and startup commands, release on every way out of the block."""

from __future__ import annotations

import asyncio

import pytest

from bash_broker import Broker, ExecuteResult, Health, SessionNotInUseError

from conftest import URL, TOKEN, acquire_waiting, eventually, hold_all, wait_all_available


async def test_state_files_and_startup_commands(broker: Broker) -> None:
    files = {"data/in.txt": b"\x00\x01bytes", "hello.sh": "echo hi from a file\n"}
    async with broker.session(files=files, startup_commands=["export GREETING=hello", "false"]) as s:
        assert [r.return_code for r in s.startup_results] == [0, 1]
        assert isinstance(s.startup_results[0], ExecuteResult)
        r = await s.execute("echo $GREETING; pwd; od -An -tx1 data/in.txt | tr -d ' \\n'; echo")
        assert r.ok and r.status == "Success"
        assert r.stdout == f"hello\n/tmp/s/{s.id}\n00016279746573\n"
        await s.execute("cd data && f() { echo fn:$1; }; X=1")
        r = await s.execute("pwd; f $X; bash ../hello.sh")
        assert r.stdout == f"/tmp/s/{s.id}/data\nfn:1\nhi from a file\n"
        failed = await s.execute("echo oops >&2; exit 3")
        assert (failed.status, failed.return_code, failed.stderr, failed.ok) == ("Failed", 3, "oops\n", False)
        assert (await s.execute("echo still here")).stdout == "still here\n"


async def test_command_timeout_keeps_the_session(broker: Broker) -> None:
    async with broker.session() as s:
        await s.execute("KEPT=yes")
        r = await s.execute("echo partial; sleep 30", timeout=0.5)
        assert r.timed_out and r.return_code == -1 and r.stdout == "partial\n"
        assert "Command timed out after 0.5 seconds" in r.stderr
        assert (await s.execute("echo $KEPT")).stdout == "yes\n"


async def test_released_on_normal_exit(broker: Broker) -> None:
    async with broker.session() as s:
        await s.execute("true")
    assert s.released
    with pytest.raises(SessionNotInUseError) as caught:
        await s.execute("true")
    assert caught.value.status == 400 and caught.value.code == "session_not_in_use"


async def test_release_with_the_last_command(broker: Broker) -> None:
    async with broker.session() as s:
        await s.execute("X=last")
        r = await s.execute("echo $X", release=True)
        assert (r.stdout, r.ok, s.released) == ("last\n", True, True)
        with pytest.raises(SessionNotInUseError):
            await s.execute("true")
    await wait_all_available(broker)
    async with broker.session() as fresh:
        assert (await fresh.execute('echo "[$X]"')).stdout == "[]\n"


async def test_released_when_the_block_raises(broker: Broker) -> None:
    with pytest.raises(RuntimeError, match="episode failed"):
        async with broker.session() as s:
            await s.execute("true")
            raise RuntimeError("episode failed")
    with pytest.raises(SessionNotInUseError):
        await s.execute("true")


async def test_released_when_the_episode_is_cancelled(broker: Broker) -> None:
    started = asyncio.Event()
    leased: list = []

    async def episode() -> None:
        async with broker.session() as s:
            leased.append(s)
            started.set()
            await s.execute("sleep 30", timeout=60)

    task = asyncio.ensure_future(episode())
    await started.wait()
    await asyncio.sleep(0)  # let the execute go out
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(SessionNotInUseError):
        await leased[0].execute("true")
    await wait_all_available(broker)


async def test_an_acquire_cancelled_while_queued_leaves_the_queue_and_holds_nothing(broker: Broker) -> None:
    holders = await hold_all(broker)
    try:
        queued = asyncio.ensure_future(broker.session().__aenter__())

        async def one_waiting() -> bool:
            return await acquire_waiting() == 1

        await eventually(one_waiting, "the acquire to wait in the broker's queue")
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued

        async def none_waiting() -> bool:
            return await acquire_waiting() == 0

        await eventually(none_waiting, "the cancelled acquire to leave the queue")
    finally:
        for h in holders:
            await h.release()
    await wait_all_available(broker)
    health = await broker.health()
    assert health.in_use_sessions == 0


async def test_health_is_typed(broker: Broker) -> None:
    h = await broker.health()
    assert isinstance(h, Health)
    assert h.status in ("healthy", "degraded")
    assert h.total_sessions == h.available_sessions + h.in_use_sessions + h.cleaning_sessions + h.broken_sessions
    assert h.warmup is None  # the pool was warm before the tests began


async def test_a_second_broker_object_shares_nothing(broker: Broker) -> None:
    async with Broker(URL, token=TOKEN) as other:
        async with other.session() as s:
            assert (await s.execute("echo $((6 * 7))")).stdout == "42\n"
