"""
Compatibility client for the pool API, written the way its users write it: aiohttp, the quick
example and the `BashSession` client class those users copy, unchanged. Run by
test/pool/pythonCompat.test.ts against a live broker:

    python3 test/python/compat_client.py http://127.0.0.1:PORT

Prints one line per check and exits non-zero at the first failure, saying what was expected.
The broker is expected to run 2 containers x 2 sessions (so 20 episodes queue for 4 sessions).
"""
import asyncio
import base64
import sys

import aiohttp
from bash_session import BashSession

SERVER_URL = sys.argv[1].rstrip("/") if len(sys.argv) > 1 else "http://localhost:8180"
EPISODES = 20


class CheckFailed(Exception):
    pass


def check(name, ok, detail=""):
    """One line per check; the first failure stops the program (see main)."""
    if not ok:
        raise CheckFailed(f"{name}: {detail}")
    print(f"ok - {name}", flush=True)


def expect_equal(name, got, want):
    check(name, got == want, f"expected {want!r}, got {got!r}")


# --- Checks ---------------------------------------------------------------------------------------


async def quick_example():
    """The pool API's quick example, with its printed result turned into a check."""
    async with aiohttp.ClientSession() as session:
        # 1. Acquire a session
        async with session.post(f"{SERVER_URL}/session/acquire", json={}) as resp:
            data = await resp.json()
            session_id = data["session_id"]

        # 2. Execute commands (state persists between commands)
        async with session.post(
            f"{SERVER_URL}/session/{session_id}/execute",
            json={"command": "cd /tmp && export MY_VAR=hello"}
        ) as resp:
            result = await resp.json()
            expect_equal("quick example: cd + export succeeds", result["return_code"], 0)

        async with session.post(
            f"{SERVER_URL}/session/{session_id}/execute",
            json={"command": "pwd && echo $MY_VAR"}
        ) as resp:
            result = await resp.json()
            expect_equal("quick example: stdout is /tmp\\nhello\\n", result["stdout"], "/tmp\nhello\n")
            expect_equal(
                "quick example: full response",
                result,
                {"status": "Success", "stdout": "/tmp\nhello\n", "stderr": "", "return_code": 0},
            )

        # 3. Release the session
        await session.post(f"{SERVER_URL}/session/{session_id}/release")


async def files_and_startup_commands():
    """Files written on acquire, plus startup_commands."""
    files = {
        "script.py": base64.b64encode(b'print("hello")').decode(),
        "data/input.txt": base64.b64encode(b'line1\nline2').decode(),
        "bin/blob.bin": base64.b64encode(bytes(range(256))).decode(),
    }
    startup_commands = ["export STARTUP_VAR=ready", "mkdir -p work && cd work", "touch started"]
    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{SERVER_URL}/session/acquire",
            json={"files": files, "startup_commands": startup_commands}
        ) as resp:
            expect_equal("acquire with files + startup_commands: HTTP status", resp.status, 200)
            data = await resp.json()
            session_id = data["session_id"]
        try:
            async def execute(command, timeout=30.0):
                async with session.post(
                    f"{SERVER_URL}/session/{session_id}/execute",
                    json={"command": command, "timeout": timeout}
                ) as resp:
                    return await resp.json()

            result = await execute("cat ../script.py")
            expect_equal("files: script.py content", result["stdout"], 'print("hello")')
            result = await execute("cat ../data/input.txt")
            expect_equal("files: data/input.txt content (nested dir)", result["stdout"], "line1\nline2")
            result = await execute("od -An -tx1 -v ../bin/blob.bin | tr -d ' \\n' | head -c 24; echo; wc -c < ../bin/blob.bin")
            expect_equal("files: binary content survives base64", result["stdout"], "000102030405060708090a0b\n256\n")
            result = await execute("echo $STARTUP_VAR; pwd; ls")
            expect_equal(
                "startup_commands: state persists into the session (env var, cwd, file)",
                result["stdout"],
                f"ready\n/tmp/s/{session_id}/work\nstarted\n",
            )
        finally:
            await session.post(f"{SERVER_URL}/session/{session_id}/release")


async def failures_and_timeouts():
    async with BashSession(SERVER_URL) as bash:
        result = await bash.run("exit 1")
        expect_equal(
            "exit 1 -> Failed / 1",
            result,
            {"status": "Failed", "stdout": "", "stderr": "", "return_code": 1},
        )
        result = await bash.run("echo still here; false")
        expect_equal("session survives exit 1", (result["stdout"], result["return_code"]), ("still here\n", 1))

        result = await bash.run("echo before; sleep 60", timeout=1)
        expect_equal("timeout: status", result["status"], "Failed")
        expect_equal("timeout: return_code", result["return_code"], -1)
        check(
            "timeout: stderr ends with 'Command timed out after 1.0 seconds'",
            result["stderr"].endswith("Command timed out after 1.0 seconds"),
            f"stderr was {result['stderr']!r}",
        )
        expect_equal("timeout: stdout before the timeout is kept", result["stdout"], "before\n")
        result = await bash.run("echo after")
        expect_equal("session usable after a timeout", result["stdout"], "after\n")


async def not_found_and_release():
    async with aiohttp.ClientSession() as session:
        bogus = "0123456789abcdef0123456789abcdef"
        async with session.post(f"{SERVER_URL}/session/{bogus}/execute", json={"command": "echo hi"}) as resp:
            expect_equal("unknown session: 404", resp.status, 404)
            body = await resp.json()
            expect_equal("unknown session: body['detail']", body.get("detail"), f"Session not found: {bogus}")
        async with session.post(f"{SERVER_URL}/session/abc123/execute", json={"command": "echo hi"}) as resp:
            expect_equal("unknown short id: 404", resp.status, 404)
            body = await resp.json()
            expect_equal("unknown short id: body['detail']", body.get("detail"), "Session not found: abc123")

        async with session.post(f"{SERVER_URL}/session/acquire", json={}) as resp:
            data = await resp.json()
            session_id = data["session_id"]
        for attempt in (1, 2, 3):
            async with session.post(f"{SERVER_URL}/session/{session_id}/release") as resp:
                expect_equal(f"release #{attempt}: 200", resp.status, 200)
                expect_equal(f"release #{attempt}: body", await resp.json(), {"status": "released"})
        async with session.post(f"{SERVER_URL}/session/{session_id}/execute", json={"command": "echo hi"}) as resp:
            expect_equal("execute after release: 400 (not in use)", resp.status, 400)
            body = await resp.json()
            check("execute after release: has detail", isinstance(body.get("detail"), str), f"body was {body!r}")


async def health():
    async with aiohttp.ClientSession() as session:
        # Released sessions are cleaned in the background: wait (generously) for the pool to settle.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while True:
            async with session.get(f"{SERVER_URL}/health") as resp:
                http_status = resp.status
                data = await resp.json()
            if data.get("status") == "healthy" or loop.time() > deadline:
                break
            await asyncio.sleep(0.1)
        expect_equal("/health: 200", http_status, 200)
    fields = [
        "total_sessions", "available_sessions", "in_use_sessions", "cleaning_sessions",
        "broken_sessions", "healthy_containers", "unhealthy_containers",
    ]
    missing = [f for f in ["status"] + fields if f not in data]
    check("/health: every pool API field present", not missing, f"missing {missing} in {data!r}")
    check("/health: counts are ints", all(type(data[f]) is int for f in fields), repr(data))
    expect_equal("/health: status", data["status"], "healthy")
    expect_equal("/health: total_sessions (2 containers x 2)", data["total_sessions"], 4)
    expect_equal("/health: healthy_containers", data["healthy_containers"], 2)
    expect_equal("/health: unhealthy_containers", data["unhealthy_containers"], 0)
    expect_equal("/health: broken_sessions", data["broken_sessions"], 0)
    per_state = data["available_sessions"] + data["in_use_sessions"] + data["cleaning_sessions"] + data["broken_sessions"]
    expect_equal("/health: states sum to total_sessions", per_state, data["total_sessions"])


async def episode(i):
    """One rollout: a fresh session must carry nothing from earlier ones, and keep its own state."""
    async with BashSession(SERVER_URL) as bash:
        result = await bash.run('echo "${EP_VAR:-unset} ${EP_LOCAL:-unset}"; ls -A | wc -l')
        if result["stdout"] != "unset unset\n0\n":
            raise CheckFailed(f"episode {i}: fresh session is not clean: {result!r}")
        await bash.run(f"export EP_VAR=ep{i}; EP_LOCAL=local{i}; mkdir -p d{i} && cd d{i} && echo {i} > mine.txt")
        for step in range(3):
            await asyncio.sleep(0.01 * (i % 5))  # interleave episodes
            result = await bash.run('echo "$EP_VAR $EP_LOCAL $(basename "$PWD") $(cat mine.txt) $(ls .. | tr "\\n" " ")"')
            want = f"ep{i} local{i} d{i} {i} d{i} \n"
            if result != {"status": "Success", "stdout": want, "stderr": "", "return_code": 0}:
                raise CheckFailed(f"episode {i} step {step}: expected stdout {want!r}, got {result!r}")
        return bash.session_id


async def concurrent_episodes():
    ids = await asyncio.gather(*(episode(i) for i in range(EPISODES)))
    expect_equal(f"{EPISODES} concurrent episodes on 4 sessions: each saw only its own state", len(ids), EPISODES)
    expect_equal("concurrent episodes: every lease had its own session_id", len(set(ids)), EPISODES)


async def main():
    for step in (quick_example, files_and_startup_commands, failures_and_timeouts, not_found_and_release, health, concurrent_episodes):
        await step()
    print("all checks passed", flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except CheckFailed as err:
        print(f"FAIL - {err}", flush=True)
        sys.exit(1)
    except Exception as err:  # a crash (KeyError on a bad body, connection refused) is a failure too
        print(f"FAIL - {type(err).__name__}: {err}", flush=True)
        raise
