"""
The pool API's Python client pattern (the `BashSession` class its users copy), unchanged, run
against a broker whose execute answers carry the termination facts (BROKER_EXECUTE_FACTS=1): it
reads the fields it knows and ignores the rest. Run by test/pool/rollout.test.ts:

    python3 test/python/facts_client.py http://127.0.0.1:PORT
"""
import asyncio
import sys

from bash_session import BashSession

SERVER_URL = sys.argv[1].rstrip("/")


async def main():
    async with BashSession(SERVER_URL) as bash:
        result = await bash.run("export X=hi; echo $X")
        assert result["stdout"] == "hi\n", result
        assert result["return_code"] == 0 and result["status"] == "Success", result
        assert "cpu_ms" in result and "timed_out" in result, f"the answer carries no facts: {result!r}"
        result = await bash.run("sleep 5", timeout=0.5)
        assert result["return_code"] == -1 and result["stderr"].endswith("Command timed out after 0.5 seconds"), result
        print("facts ignored: ok", flush=True)


asyncio.run(main())
