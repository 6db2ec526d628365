"""A sandbox group driven from Python aiohttp: a group with a populated namespace, two
sandboxes with different limits, tools and attachments (read_write and read), a tool, a long command
with /input and /output, a database query from inside a sandbox (python3's urllib there), the limits
in the containers' cgroup files, a refused write, and everything stopped.
Usage: sandbox_group_client.py <broker url>; $GROUP_FIXTURES_DIR holds the tools and the YAML.
Prints FAIL and exits non-zero on the first failed check; "all checks passed" at the end."""
import asyncio
import json
import os
import sys

import aiohttp

URL = sys.argv[1]
FIXTURES = os.environ["GROUP_FIXTURES_DIR"]
MIB = 1024 * 1024
CGROUP_LIMITS = ("if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us "
                 "/sys/fs/cgroup/memory/memory.limit_in_bytes; else cut -d' ' -f1 /sys/fs/cgroup/cpu.max; "
                 "cat /sys/fs/cgroup/memory.max; fi")
DB_QUERY = ("python3 -c 'import json, os, sys, urllib.request, urllib.error\n"
            "req = urllib.request.Request(os.environ[\"VECTOR_DB_URL\"] + sys.argv[1], data=sys.argv[2].encode(), method=\"POST\",\n"
            "    headers={\"Authorization\": \"Bearer \" + os.environ[\"VECTOR_DB_TOKEN\"]})\n"
            "try:\n    r = urllib.request.urlopen(req, timeout=30); print(r.status, r.read().decode())\n"
            "except urllib.error.HTTPError as e:\n    print(e.code, e.read().decode())' ")


def check(condition, what):
    if not condition:
        print(f"FAIL: {what}")
        sys.exit(1)
    print(f"ok: {what}")


async def post(http, url, body=None):
    async with http.post(url, json=body if body is not None else {}) as resp:
        return resp.status, await resp.json()


async def run_bash(http, sandbox, command):
    """One bash action, followed to its end through /output when it outlasts the action wait."""
    status, body = await post(http, f"{sandbox}/execute", {"actions": {"bash": {"description": "run", "args": {"command": command}}}})
    check(status == 200, f"execute answers 200 (got {status})")
    obs = body["observations"][0]
    stdout = obs["stdout"]
    for _ in range(600):
        if not obs["terminal_still_running"]:
            break
        await asyncio.sleep(0.1)
        async with http.get(f"{sandbox}/output") as resp:
            obs = await resp.json()
        stdout += obs["stdout"]
    return stdout


async def read_output_until(http, sandbox, done):
    seen, running = "", True
    for _ in range(600):
        async with http.get(f"{sandbox}/output") as resp:
            out = await resp.json()
        seen += out["stdout"]
        running = out["terminal_still_running"]
        if done(seen, running):
            return seen, running
        await asyncio.sleep(0.1)
    check(False, f"terminal output arrived (so far {seen!r})")


async def main():
    async with aiohttp.ClientSession() as http:
        status, body = await post(http, f"{URL}/group/start", {
            "database_access": {"database_type": "vector", "access_type": "read_write", "namespaces": ["default", "other"]},
            "initial_database_population_config": os.path.join(FIXTURES, "population.yml")})
        check((status, body) == (200, {"status": "started"}), f"the group starts ({status} {body})")

        status, body = await post(http, f"{URL}/sandbox/start", {
            "id": "py-writer", "tools": [os.path.join(FIXTURES, "word_count.py")],
            "compute_resources": {"cpu_cores": 0.5, "ram_gb": 0.5, "disk_gb": 0.1, "memory_bandwidth_gbps": 5.0, "unit": "absolute"},
            "attached_databases": {"vector_db": {"database_type": "vector", "access_type": "read_write", "namespaces": ["default"]}}})
        check(status == 200 and body["sandbox_url"].startswith("http://"), f"the first sandbox starts ({status} {body})")
        check(any("memory_bandwidth_gbps" in w for w in body["warnings"]), "memory bandwidth is said to be unenforced")
        writer = body["sandbox_url"]
        status, body = await post(http, f"{URL}/sandbox/start", {
            "id": "py-reader", "tools": [os.path.join(FIXTURES, "echo_args.py")],
            "compute_resources": {"cpu_cores": 1, "ram_gb": 0.25, "disk_gb": 0.05},
            "attached_databases": {"vector_db": {"database_type": "vector", "access_type": "read", "namespaces": ["default"]}}})
        check(status == 200, f"the second sandbox starts ({status} {body})")
        reader = body["sandbox_url"]
        for sandbox in (writer, reader):
            async with http.get(f"{sandbox}/health") as resp:
                check(resp.status == 200 and (await resp.json()) == {"status": "healthy"}, f"{sandbox} is healthy")

        status, body = await post(http, f"{writer}/execute", {"actions": {"word_count": {"description": "count", "args": {"text": "one two three four"}}}})
        check(body["observations"][0]["stdout"] == '{"words": 4, "first": "one"}', f"the tool answers ({body})")

        status, body = await post(http, f"{writer}/execute", {"actions": {"bash": {"args": {"command": 'sleep 2; read -p "secret? " s; echo "heard $s"'}}}})
        check(body["observations"][0]["terminal_still_running"] is True, "a long command answers still running")
        await read_output_until(http, writer, lambda seen, _: "secret? " in seen)
        status, body = await post(http, f"{writer}/input", {"text": "sesame\r"})
        check((status, body) == (200, {"status": "success"}), "input is typed")
        seen, running = await read_output_until(http, writer, lambda seen, running: "heard sesame" in seen and not running)
        check(not running, "the command ended after its input")

        hits = await run_bash(http, writer, DB_QUERY + '/namespaces/default/query \'{"embedding": [0.9, 0.1, 0], "k": 1}\'')
        code, _, answer = hits.strip().partition(" ")
        check(code == "200" and json.loads(answer)["results"][0]["id"] == "apple", f"the database answers from inside ({hits!r})")
        refused = await run_bash(http, reader, DB_QUERY + '/namespaces/default/documents \'{"documents": [{"id": "x", "text": "x", "embedding": [1, 1, 1]}]}\'')
        check(refused.startswith("403 "), f"a write through the read attachment is refused ({refused!r})")

        writer_limits = (await run_bash(http, writer, CGROUP_LIMITS)).split()
        check(writer_limits == ["50000", str(512 * MIB)], f"the first sandbox's cgroup limits ({writer_limits})")
        reader_limits = (await run_bash(http, reader, CGROUP_LIMITS)).split()
        check(reader_limits == ["100000", str(256 * MIB)], f"the second sandbox's cgroup limits ({reader_limits})")

        status, body = await post(http, f"{URL}/sandbox/stop", {"id": "py-reader"})
        check((status, body) == (200, {"status": "stopped"}), "a sandbox stops")
        status, body = await post(http, f"{URL}/group/stop")
        check((status, body) == (200, {"status": "stopped"}), "the group stops")
        for sandbox in (writer, reader):
            try:
                async with http.get(f"{sandbox}/health") as resp:
                    check(False, f"{sandbox} still answers after the stop ({resp.status})")
            except aiohttp.ClientConnectionError:
                print(f"ok: {sandbox} is gone")
    print("all checks passed")


asyncio.run(main())
