"""An agent on the workspace API, step by step as an agent is meant to use it, with aiohttp
(whose client speaks WebSocket too). Usage: workspace_agent.py <broker url>. Prints FAIL lines and
exits non-zero on the first failed check; "all checks passed" at the end."""
import asyncio
import json
import sys

import aiohttp

URL = sys.argv[1]
STILL_RUNNING = "--- Process still running, more output will stream via WebSocket ---"


def check(condition, what):
    if not condition:
        print(f"FAIL: {what}")
        sys.exit(1)
    print(f"ok: {what}")


async def main():
    async with aiohttp.ClientSession() as http:
        # Follow /ws/workspace for real-time feedback (opened first: nothing is missed).
        async with http.ws_connect(URL.replace("http", "ws", 1) + "/ws/workspace") as ws:
            # Always use /api/execute; expect partial output in the JSON response.
            command = "for i in 1 2 3; do echo step $i; sleep 0.5; done"
            async with http.post(f"{URL}/api/execute", json={"command": command, "wait": 0.2}) as resp:
                check(resp.status == 200, f"execute answers 200 (got {resp.status})")
                job = await resp.json()
            check(job["command"] == command, "the answer names the command")
            check(job["returncode"] is None, "a running job answers returncode null")
            check(job["stdout"].endswith(STILL_RUNNING), "the answer ends with the still-running line")

            # Rely on /ws/workspace for the complete output.
            lines, exit_event, last_seq = [], None, None
            while exit_event is None:
                msg = await asyncio.wait_for(ws.receive(), timeout=60)
                check(msg.type == aiohttp.WSMsgType.TEXT, "events are text messages")
                event = json.loads(msg.data)
                if last_seq is not None:
                    check(event["seq_id"] == last_seq + 1, f"seq_id {event['seq_id']} follows {last_seq}")
                last_seq = event["seq_id"]
                if event.get("job_id") != job["job_id"]:
                    continue
                if event["type"] == "output":
                    check(event["source"] == "api" and event["stream"] == "stdout", "output events carry source and stream")
                    lines.append(event["line"])
                elif event["type"] == "exit":
                    exit_event = event
            check(lines == ["step 1", "step 2", "step 3"], f"the stream has every line ({lines})")
            check(exit_event["returncode"] == 0, "the exit event has the exit code")

        # Never use the deprecated endpoints: they answer 410 and point to /api/execute.
        for path in ["/execute-async", "/execute-async/status", "/execute/worker"]:
            async with http.post(URL + path, json={"command": "true"}) as resp:
                body = await resp.json()
                check(resp.status == 410 and "/api/execute" in body["detail"], f"{path} answers 410")

        # To retrieve recent activity, use /api/workspace/logs?offset=-20&limit=20.
        async with http.get(f"{URL}/api/workspace/logs", params={"offset": "-20", "limit": "20"}) as resp:
            logs = await resp.json()
        check(isinstance(logs, list) and 0 < len(logs) <= 20, "the logs are a list of at most 20 events")
        mine = [e for e in logs if e.get("job_id") == job["job_id"]]
        check([e["type"] for e in mine][-1] == "exit", "the logs end the job with its exit event")

        # Read/write files with /api/write, /api/read and /api/read-partial.
        async with http.post(f"{URL}/api/write", json={"filename": "notes/agent.txt", "content": "0123456789"}) as resp:
            check(resp.status == 200, "write answers 200")
        async with http.get(f"{URL}/api/read", params={"filename": "notes/agent.txt"}) as resp:
            check((await resp.json())["content"] == "0123456789", "read returns the content")
        async with http.get(f"{URL}/api/read-partial", params={"filename": "notes/agent.txt", "offset": "4", "limit": "3"}) as resp:
            part = await resp.json()
        check(part["content"] == "456" and part["total_size"] == 10 and part["has_more"], "read-partial returns a chunk, the size, more")
        async with http.post(f"{URL}/api/execute", json={"command": "cat notes/agent.txt"}) as resp:
            check((await resp.json())["stdout"] == "0123456789\n", "the shell sees the file the agent wrote")
    print("all checks passed")


asyncio.run(main())
