"""One exception class per broker error, each carrying the broker's status, code and detail."""

from __future__ import annotations

import asyncio

import pytest

from bash_broker import (
    BadRequestError,
    Broker,
    BrokerTimeoutError,
    NotFoundError,
    PoolExhaustedError,
    RetryPolicy,
    Session,
    SessionBrokenError,
    SessionBusyError,
    StartupFailedError,
    Timeouts,
    UnauthorizedError,
)

from conftest import ACQUIRE_TIMEOUT_S, TOKEN, URL, acquire_waiting, eventually, hold_all, wait_all_available


async def test_not_found(broker: Broker) -> None:
    with pytest.raises(NotFoundError) as caught:
        await Session(broker, "f" * 32, []).execute("true")
    assert (caught.value.status, caught.value.code) == (404, "session_not_found")
    assert "f" * 32 in caught.value.detail


async def test_bad_request(broker: Broker) -> None:
    with pytest.raises(BadRequestError) as caught:
        async with broker.session(files={"../escape.txt": "x"}):
            pass
    assert (caught.value.status, caught.value.code) == (400, "bad_request")
    async with broker.session() as s:
        with pytest.raises(BadRequestError):
            await s.execute("true", timeout=-1)


async def test_broken_session(broker: Broker) -> None:
    async with broker.session() as s:
        with pytest.raises(SessionBrokenError) as caught:
            await s.execute("kill -9 $$")
        assert caught.value.status == 410 and caught.value.code == "session_broken"
        assert "acquire a new session" in caught.value.detail
    await wait_all_available(broker)


async def test_startup_failed(broker: Broker) -> None:
    with pytest.raises(StartupFailedError) as caught:
        async with broker.session(startup_commands=["true", "kill -9 $$"]):
            pass
    assert caught.value.status == 422
    await wait_all_available(broker)


async def test_busy(broker: Broker) -> None:
    async with broker.session() as s:
        results = await asyncio.gather(s.execute("sleep 1"), s.execute("sleep 1"), return_exceptions=True)
        busy = [r for r in results if isinstance(r, SessionBusyError)]
        assert len(busy) == 1 and busy[0].status == 409


async def test_unauthorized() -> None:
    if not TOKEN:
        pytest.fail("the broker under test must have BROKER_TOKEN set (pythonClient.test.ts sets one)")
    async with Broker(URL) as anonymous, Broker(URL, token="wrong") as wrong:
        assert (await anonymous.health()).total_sessions > 0  # /health is public
        for client in (anonymous, wrong):
            with pytest.raises(UnauthorizedError) as caught:
                await client.acquire()
            assert caught.value.status == 401


async def test_pool_exhausted_without_retries() -> None:
    async with Broker(URL, token=TOKEN, retry=RetryPolicy(attempts=1)) as broker:
        holders = await hold_all(broker)
        try:
            with pytest.raises(PoolExhaustedError) as caught:
                await broker.acquire()
            err = caught.value
            assert (err.status, err.code) == (503, "pool_exhausted")
            assert f"within {ACQUIRE_TIMEOUT_S:g} seconds" in err.detail
            # The broker's Retry-After is the median recent acquire wait, in whole seconds, at least 1:
            # what earlier waits on this broker were decides which.
            assert err.retry_after is not None and err.retry_after >= 1.0 and err.retry_after.is_integer()
        finally:
            for h in holders:
                await h.release()


async def test_client_timeout_on_a_queued_acquire() -> None:
    # The client gives up before the broker's acquire timeout: its own timeout error, and the
    # broker forgets the waiter (the connection closed).
    async with Broker(URL, token=TOKEN, timeouts=Timeouts(acquire=ACQUIRE_TIMEOUT_S / 4), retry=RetryPolicy(attempts=1)) as broker:
        holders = await hold_all(broker)
        try:
            with pytest.raises(BrokerTimeoutError) as caught:
                await broker.acquire()
            assert isinstance(caught.value, TimeoutError)

            async def none_waiting() -> bool:
                return await acquire_waiting() == 0

            await eventually(none_waiting, "the abandoned acquire to leave the queue")
        finally:
            for h in holders:
                await h.release()
