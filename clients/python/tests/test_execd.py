"""A session's execd API from the client: commands beside the session's shell, files in and out."""

from __future__ import annotations

import pytest

from bash_broker import BadRequestError, Broker, ForbiddenError, NotFoundError


async def test_commands_run_beside_the_shell_and_files_round_trip(broker: Broker) -> None:
    async with broker.session() as s:
        await s.execute("cd /tmp && export MINE=1")
        ex = s.execd
        await ex.ping()
        r = await ex.run("echo out; echo err >&2; printf '%s' \"$FROM\"; exit 3", envs={"FROM": "env"})
        assert (r.stdout, r.stderr, r.exit_code) == ("out\nenv\n", "err\n", 3)
        assert r.command_id
        ok = await ex.run("pwd", cwd="/")
        assert (ok.stdout, ok.exit_code) == ("/\n", 0)
        # The command ran in a process of its own: the session's shell kept its state.
        assert (await s.execute("pwd; echo $MINE")).stdout == "/tmp\n1\n"

        await ex.write_file("data/blob.bin", b"\x00\xffraw", mode=600)
        assert await ex.read_file("data/blob.bin") == b"\x00\xffraw"
        assert (await s.execute("cd - >/dev/null; stat -c %a data/blob.bin")).stdout == "600\n"
        with pytest.raises(NotFoundError):
            await ex.read_file("missing.txt")
        with pytest.raises(ForbiddenError):
            await ex.read_file("/etc/passwd")
    # Released: its execd is gone with it (400, as every call on a released session).
    with pytest.raises(BadRequestError):
        await s.execd.read_file("data/blob.bin")
