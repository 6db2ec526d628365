"""
The pool API's Python client pattern (the `BashSession` class its users copy), unchanged, run
against a broker whose execute answers carry the termination facts (BROKER_EXECUTE_FACTS=1): it
reads the fields it knows and ignores the rest. Run by test/http/rollout.test.ts:

    python3 test/python/facts_client.py http://127.0.0.1:PORT
"""
import asyncio
import sys

import aiohttp

SERVER_URL = sys.argv[1].rstrip("/")


class BashSession:
    def __init__(self, server_url="http://localhost:8180"):
        self.server_url = server_url
        self.session_id = None
        self.http = None

    async def __aenter__(self):
        self.http = aiohttp.ClientSession()
        async with self.http.post(f"{self.server_url}/session/acquire", json={}) as resp:
            data = await resp.json()
            self.session_id = data["session_id"]
        return self

    async def __aexit__(self, *args):
        if self.session_id:
            await self.http.post(f"{self.server_url}/session/{self.session_id}/release")
        await self.http.close()

    async def run(self, command: str, timeout: float = 30) -> dict:
        async with self.http.post(
            f"{self.server_url}/session/{self.session_id}/execute",
            json={"command": command, "timeout": timeout}
        ) as resp:
            return await resp.json()


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
