"""
The pool API's Python client class, `BashSession`, as its users copy it from the API document,
unchanged: the compatibility scripts here import it rather than each holding a copy.
"""
import aiohttp


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
