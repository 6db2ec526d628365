"""The workspace classes over the workspace API: a named workspace for a block, jobs, files, events."""

from __future__ import annotations

import asyncio

import pytest

from bash_broker import Broker, ForbiddenError, NotFoundError, WorkspaceBusyError

from conftest import wait_all_available


async def test_a_named_workspace_runs_jobs_keeps_files_and_ends_with_its_block(broker: Broker) -> None:
    before = (await broker.health()).in_use_sessions
    async with broker.new_workspace() as ws:
        assert ws.id and ws.workdir and ws.workdir.startswith("/tmp/s/")
        assert (await broker.health()).in_use_sessions == before + 1  # it holds one slot
        job = await ws.execute("cd sub 2>/dev/null || mkdir sub && cd sub; export W=1; echo hi; false")
        assert (job.returncode, job.stdout, job.running) == (1, "hi\n", False)
        assert (await ws.execute("pwd; echo $W")).stdout == f"{ws.workdir}sub\n1\n"
        assert await ws.write_file("data/blob.bin", b"\x00\xffraw") == 5
        f = await ws.read_file("data/blob.bin")
        assert (f.content, f.size, f.path) == (b"\x00\xffraw", 5, f"{ws.workdir}data/blob.bin")
        with pytest.raises(ForbiddenError):
            await ws.read_file("../../../etc/passwd")
        with pytest.raises(NotFoundError):
            await ws.read_file("missing.txt")

        running = await ws.execute("sleep 30; echo never", wait=0.2)
        assert running.running and running.returncode is None
        with pytest.raises(WorkspaceBusyError) as caught:
            await ws.execute("true", wait=0)
        assert caught.value.job_id == running.job_id
        assert await ws.interrupt() == running.job_id

        async def exited() -> bool:
            return any(e.get("type") == "exit" and e.get("job_id") == running.job_id for e in await ws.logs(offset=-50, limit=50))

        deadline = asyncio.get_running_loop().time() + 30
        while not await exited():
            assert asyncio.get_running_loop().time() < deadline, "the interrupted job never exited"
            await asyncio.sleep(0.05)
    with pytest.raises(NotFoundError):
        await ws.execute("true")
    await wait_all_available(broker)
