/**
 * A sandbox group driven as a user drives it, for the Docker suites: JSON over HTTP to the broker and
 * to each sandbox's own URL, bash actions, the terminal's output gathered across reads, and what a
 * stopped group must have left behind (nothing).
 */
import fs from 'node:fs';
import { request } from 'undici';
import { eventually } from './eventually';

export interface Reply {
  status: number;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function call(url: string, method: 'GET' | 'POST', body?: unknown): Promise<Reply> {
  const res = await request(url, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' }, headersTimeout: 0, bodyTimeout: 0 });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
}

export interface Observation {
  stdout: string;
  stderr: string;
  terminal_still_running: boolean;
  exit_code: number | null;
}

/** One `bash` action; its observation. */
export async function bash(sandboxUrl: string, command: string): Promise<Observation> {
  const r = await call(`${sandboxUrl}/execute`, 'POST', { actions: { bash: { description: 'a command', args: { command } } } });
  if (r.status !== 200) throw new Error(`execute answered ${r.status}: ${JSON.stringify(r.json)}`);
  return r.json.observations[0] as Observation;
}

/**
 * One `bash` action followed to its end: on a loaded machine a quick command can outlast the action
 * wait, and then its observation has the output so far and /output has the rest.
 */
export async function bashToEnd(sandboxUrl: string, command: string, timeoutMs = 60_000): Promise<Observation> {
  const first = await bash(sandboxUrl, command);
  if (!first.terminal_still_running) return first;
  const rest = await outputUntil(sandboxUrl, (_, running) => !running, timeoutMs);
  return { ...first, stdout: first.stdout + rest.all, terminal_still_running: false };
}

/** Reads /output until `until` matches everything read so far (each read returns only what is new). */
export async function outputUntil(sandboxUrl: string, until: (all: string, running: boolean) => boolean, timeoutMs = 30_000): Promise<{ all: string; running: boolean }> {
  let all = '';
  let running = true;
  await eventually(
    async () => {
      const r = await call(`${sandboxUrl}/output`, 'GET');
      all += r.json.stdout;
      running = r.json.terminal_still_running;
      return until(all, running);
    },
    timeoutMs,
    () => `terminal output matching the test (so far: ${JSON.stringify(all)}, running: ${running})`,
  );
  return { all, running };
}

/**
 * A client of the group's database inside a sandbox, on python3's standard library (urllib):
 * `python3 /workspace/db.py METHOD PATH [JSON]` prints `{"status", "body"}`.
 */
export const DB_CLIENT_PY = `import json, os, sys, urllib.request, urllib.error
method, path = sys.argv[1], sys.argv[2]
data = sys.argv[3].encode() if len(sys.argv) > 3 else None
req = urllib.request.Request(os.environ["VECTOR_DB_URL"] + path, data=data, method=method,
                             headers={"Authorization": "Bearer " + os.environ["VECTOR_DB_TOKEN"], "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=30) as r:
        print(json.dumps({"status": r.status, "body": json.loads(r.read())}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "body": json.loads(e.read())}))
`;

export async function installDbClient(sandboxUrl: string): Promise<void> {
  const o = await bashToEnd(sandboxUrl, `cat > /workspace/db.py <<'PY'\n${DB_CLIENT_PY}PY`);
  if (o.terminal_still_running || o.stderr !== '') throw new Error(`could not write db.py: ${JSON.stringify(o)}`);
}

/** One database call from inside the sandbox. */
export async function dbCall(sandboxUrl: string, method: string, path: string, body?: unknown): Promise<Reply> {
  const arg = body === undefined ? '' : ` '${JSON.stringify(body)}'`;
  const o = await bashToEnd(sandboxUrl, `python3 /workspace/db.py ${method} ${path}${arg}`);
  const line = o.stdout.trim().split('\n').pop() ?? '';
  try {
    const parsed = JSON.parse(line) as { status: number; body: unknown };
    return { status: parsed.status, json: parsed.body };
  } catch {
    throw new Error(`db.py printed no answer: ${JSON.stringify(o)}`);
  }
}

/** Whether anything accepts a TCP connection on 127.0.0.1:`port`. */
export async function listening(port: number): Promise<boolean> {
  try {
    await call(`http://127.0.0.1:${port}/health`, 'GET');
    return true;
  } catch {
    return false;
  }
}

/** Mount points at or under `dir` in this host's mount table. */
export function mountsUnder(dir: string): string[] {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((p): p is string => !!p && (p === dir || p.startsWith(`${dir}/`)));
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
