/**
 * The pool API's additive fields and routes for rollout clients (docs/pool.md, For rollout clients): request_id on
 * execute and acquire, lease_ttl with heartbeats and fencing, termination facts, acquire_group,
 * history and trajectories, and honest backpressure. Runs on both projects (local and docker).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestBroker, testBackend, eventually, metricValue, withLease, type TestBroker } from '../helpers/broker';
import { findPython, runPythonClient } from '../helpers/python';
import { LocalBackend } from '../../src/backends/local/localBackend';
import { readUsageMounts } from '../../src/backends/docker/cgroups/sessionUsage';

/** The kernel figures the backend can give here (docs/pool.md, termination facts): cpu needs the session's own cgroup. */
function cpuKnown(tb: TestBroker): boolean {
  return !(tb.backend instanceof LocalBackend) || tb.backend.confinement === 'cgroup';
}

describe('rollout fields and routes', () => {
  let tb: TestBroker;
  const trajectoryDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bkr-rl-traj-'));
  beforeAll(async () => {
    tb = await startTestBroker({
      BROKER_CONTAINERS: '2',
      BROKER_SESSIONS_PER_CONTAINER: '2',
      BROKER_MAX_LEASE_TTL: '30',
      BROKER_MAX_OUTPUT_BYTES: '4096',
      BROKER_HISTORY_OUTPUT_CHARS: '8',
      BROKER_TRAJECTORY_DIR: trajectoryDir,
    });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
    fs.rmSync(trajectoryDir, { recursive: true, force: true });
  }, 60_000);

  it('execute with request_id: a retry after a dropped connection gets the first answer; the command ran once', async () => {
    await withLease(tb, async (id) => {
      const body = { command: 'sleep 0.5; echo x >> count; wc -l < count', request_id: 'step-1' };
      const dropped = new AbortController();
      const first = tb.postAbortable(`/session/${id}/execute`, body, dropped.signal).catch((err: Error) => err);
      await new Promise((r) => setTimeout(r, 100));
      dropped.abort(); // the client's connection is gone mid-command
      expect(await first).toHaveProperty('name', 'AbortError');
      // The retry arrives while the first run is still in flight: it waits for it, no 409 busy.
      const retry = await tb.post(`/session/${id}/execute`, body);
      expect(retry.status).toBe(200);
      expect(retry.json).toEqual({ status: 'Success', stdout: '1\n', stderr: '', return_code: 0 });
      const again = await tb.post(`/session/${id}/execute`, body);
      expect(again.json).toEqual(retry.json);
      expect((await tb.exec(id, 'wc -l < count')).stdout).toBe('1\n');
      // Two at once with the same id: one run, both answers the same.
      const twin = { command: 'echo y >> count; wc -l < count', request_id: 'step-2' };
      const [a, b] = await Promise.all([tb.post(`/session/${id}/execute`, twin), tb.post(`/session/${id}/execute`, twin)]);
      expect([a.json.stdout, b.json.stdout]).toEqual(['2\n', '2\n']);
      const conflict = await tb.post(`/session/${id}/execute`, { command: 'echo other', request_id: 'step-1' });
      expect(conflict.status).toBe(409);
      expect(conflict.json.code).toBe('request_id_conflict');
      expect((await tb.exec(id, 'wc -l < count')).stdout).toBe('2\n');
      const bad = await tb.post(`/session/${id}/execute`, { command: 'true', request_id: '' });
      expect(bad.status).toBe(400);
    });
  });

  it('execute with release: the answer, then the lease is over as after a release call; refused requests release nothing', async () => {
    // A refused execute changes nothing: a bad flag, and one sent while another command runs (409).
    const kept = await tb.acquire();
    expect((await tb.exec(kept, 'X=kept')).return_code).toBe(0);
    const bad = await tb.post(`/session/${kept}/execute`, { command: 'true', release: 'yes' });
    expect([bad.status, bad.json.code]).toEqual([400, 'bad_request']);
    const running = tb.post(`/session/${kept}/execute`, { command: 'sleep 3; echo $X' });
    await eventually(async () => (await tb.post(`/session/${kept}/execute`, { command: 'true' })).status === 409, 20_000, 'the first command running');
    const busy = await tb.post(`/session/${kept}/execute`, { command: 'true', release: true });
    expect([busy.status, busy.json.code]).toEqual([409, 'session_busy']);
    expect((await running).json.stdout).toBe('kept\n');

    // The last command of an episode and its release in one request.
    const last = await tb.post(`/session/${kept}/execute`, { command: 'echo $X; echo err >&2; exit 3', release: true });
    expect(last.status).toBe(200);
    expect(last.json).toEqual({ status: 'Failed', stdout: 'kept\n', stderr: 'err\n', return_code: 3, released: true });
    const after = await tb.post(`/session/${kept}/execute`, { command: 'echo $X' });
    expect([after.status, after.json.code]).toEqual([400, 'session_not_in_use']);
    expect((await tb.post(`/session/${kept}/release`)).status).toBe(200); // still idempotent

    // A timed-out command is released too; with request_id a retry gets the same answer and runs nothing.
    const other = await tb.acquire();
    const body = { command: 'X=other; sleep 5', timeout: 0.5, request_id: 'last-step', release: true, facts: true };
    const timedOut = await tb.post(`/session/${other}/execute`, body);
    expect(timedOut.status).toBe(200);
    expect(timedOut.json).toMatchObject({ status: 'Failed', return_code: -1, timed_out: true, released: true });
    expect(Object.keys(timedOut.json).at(-1)).toBe('released');
    const retry = await tb.post(`/session/${other}/execute`, body);
    expect(retry.json).toEqual(timedOut.json);
    await tb.waitAllAvailable(60_000);
    // Every next lease starts pristine: nothing of either.
    const ids = await Promise.all([tb.acquire(), tb.acquire(), tb.acquire(), tb.acquire()]);
    for (const id of ids) expect((await tb.exec(id, 'echo "[$X]"')).stdout).toBe('[]\n');
    for (const id of ids) await tb.release(id);
  });

  it('acquire with request_id: a retried acquire returns the same lease, never a second one', async () => {
    const [a, b] = await Promise.all([tb.post('/session/acquire', { request_id: 'ep-7' }), tb.post('/session/acquire', { request_id: 'ep-7' })]);
    expect(a.status).toBe(200);
    expect(b.json.session_id).toBe(a.json.session_id);
    expect((await tb.post('/session/acquire', { request_id: 'ep-7' })).json.session_id).toBe(a.json.session_id);
    expect((await tb.health()).in_use_sessions).toBe(1);
    expect((await tb.post('/session/acquire', { request_id: 'ep-7', startup_commands: ['true'] })).status).toBe(409);
    await tb.release(a.json.session_id);
  });

  it('lease_ttl: heartbeats and calls renew it; once it passes the lease is reclaimed and its holder told why', async () => {
    const before = (await tb.health()).reclaimed_sessions.lease_ttl as number;
    const r = await tb.post('/session/acquire', { lease_ttl: 1.5 });
    expect(r.json.lease_ttl).toBe(1.5);
    const id = r.json.session_id as string;
    for (let i = 0; i < 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await tb.post(`/session/${id}/heartbeat`)).json).toEqual({ status: 'alive', lease_ttl: 1.5 });
    }
    // Polled through /health: any call on the lease would renew it.
    await eventually(async () => (await tb.health()).reclaimed_sessions.lease_ttl === before + 1, 20_000, 'the lease to be reclaimed');
    const gone = await tb.post(`/session/${id}/execute`, { command: 'true' });
    expect(gone.json).toMatchObject({ code: 'session_not_in_use', reclaimed: 'lease_ttl' });
    expect(gone.json.detail).toMatch(/lease_ttl of 1.5 s passed/);
    expect((await tb.post(`/session/${id}/heartbeat`)).status).toBe(400);
    expect((await tb.health()).reclaimed_sessions.lease_ttl).toBe(before + 1);
    expect(metricValue(await tb.metrics(), 'broker_sessions_reclaimed_total', { reason: 'lease_ttl' })).toBe(before + 1);
    const capped = await tb.post('/session/acquire', { lease_ttl: 99999 });
    expect(capped.json.lease_ttl).toBe(30);
    await tb.release(capped.json.session_id);
    expect((await tb.post('/session/acquire', { lease_ttl: -1 })).status).toBe(400);
  }, 60_000);

  it('termination facts, when asked for: wait status, timeout, truncation, and kernel figures or null', async () => {
    await withLease(tb, async (id) => {
      const plain = await tb.exec(id, 'echo hi');
      expect(plain).toEqual({ status: 'Success', stdout: 'hi\n', stderr: '', return_code: 0 });
      const ok = await tb.execFull(id, 'i=0; while ((i < 300000)); do ((i++)); done; echo done');
      expect(ok).toMatchObject({ return_code: 0, timed_out: false, interrupted: false, signal: null, truncated: false, truncated_bytes: { stdout: 0, stderr: 0 } });
      expect(ok.duration_ms).toBeGreaterThan(0);
      if (cpuKnown(tb)) expect(ok.cpu_ms).toBeGreaterThan(0);
      else expect(ok.cpu_ms).toBeNull();
      for (const field of ['max_rss_kb', 'oom_killed'] as const) expect(ok[field] === null || typeof ok[field] === (field === 'oom_killed' ? 'boolean' : 'number')).toBe(true);
      if (testBackend === 'docker' && readUsageMounts().memory !== null) {
        // cgroup v1 or hybrid engine host: the session's own memory cgroup gives its peak.
        const big = await tb.execFull(id, "x=$(head -c 50000000 /dev/zero | tr '\\0' a); echo ${#x}; unset x");
        expect(big).toMatchObject({ stdout: '50000000\n', oom_killed: false });
        expect(big.max_rss_kb).toBeGreaterThan(48_000);
        expect(big.cpu_ms).toBeGreaterThan(0);
      }
      const killed = await tb.execFull(id, "bash -c 'kill -KILL $$'");
      expect(killed).toMatchObject({ return_code: 137, signal: 'SIGKILL', timed_out: false });
      const timedOut = await tb.execFull(id, 'sleep 30', 0.5);
      expect(timedOut).toMatchObject({ return_code: -1, timed_out: true, interrupted: true, signal: 'SIGINT' });
      const flood = await tb.execFull(id, 'head -c 10000 /dev/zero | tr "\\0" x');
      expect(flood.truncated).toBe(true);
      expect(flood.truncated_bytes).toEqual({ stdout: 10000 - 4096, stderr: 0 });
      expect((await tb.exec(id, 'echo still')).stdout).toBe('still\n');
    });
  }, 60_000);

  it('history: the lease journal of executes, head and tail of each stream; one JSON line per lease on release', async () => {
    const id = await tb.acquire();
    await tb.post(`/session/${id}/execute`, { command: 'echo 0123456789abcdefghij', request_id: 'h1' });
    await tb.exec(id, 'exit 3');
    const h = await tb.get(`/session/${id}/history`);
    expect(h.status).toBe(200);
    expect(h.json.dropped).toBe(0);
    expect(h.json.entries).toHaveLength(2);
    expect(h.json.entries[0]).toMatchObject({ seq: 0, request_id: 'h1', return_code: 0, stdout_head: '01234567', stdout_tail: 'defghij\n', stdout_chars: 21 });
    expect(h.json.entries[1]).toMatchObject({ seq: 1, request_id: null, command: 'exit 3', return_code: 3 });
    await tb.release(id);
    expect((await tb.get(`/session/${id}/history`)).status).toBe(400);
    await tb.broker.trajectories!.flush();
    const lines = fs.readFileSync(path.join(trajectoryDir, 'trajectories.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const mine = lines.find((l) => l.session_id === id);
    expect(mine).toMatchObject({ ended_by: 'released', dropped: 0 });
    expect(mine.entries.map((e: { command: string }) => e.command)).toEqual(['echo 012[...]cdefghij', 'exit 3']); // a command is kept as its head and tail too
  });

  it('acquire_group: n sessions or none, spread over containers, refused at once when impossible', async () => {
    const r = await tb.post('/session/acquire_group', { n: 2, spread: true, files: { 'g.txt': Buffer.from('g').toString('base64') }, startup_commands: ['cat g.txt'] });
    expect(r.status).toBe(200);
    expect(r.json.sessions).toHaveLength(2);
    expect(new Set(r.json.sessions.map((s: { container: number }) => s.container)).size).toBe(2);
    for (const s of r.json.sessions) expect(s.startup_results[0].stdout).toBe('g');
    expect((await tb.post('/session/acquire_group', { n: 3, spread: true })).status).toBe(400);
    expect((await tb.post('/session/acquire_group', { n: 5 })).status).toBe(400);
    expect((await tb.post('/session/acquire_group', { n: 0 })).status).toBe(400);
    // No body has no n: refused as any missing n is (it once failed inside the route, a 500).
    const empty = await tb.postRaw('/session/acquire_group', '');
    expect({ status: empty.status, body: empty.json }).toEqual({ status: 400, body: { detail: "'n' is required: an integer from 1 to 1024, got undefined", code: 'bad_request' } });
    // Two of four held: a group of three waits, and gets none, after its timeout.
    const waiting = await tb.post('/session/acquire_group', { n: 3, acquire_timeout: 0.5 });
    expect(waiting.status).toBe(503);
    expect((await tb.health()).in_use_sessions).toBe(2);
    for (const s of r.json.sessions) await tb.release(s.session_id);
    const all = await tb.post('/session/acquire_group', { n: 4 });
    expect(all.json.sessions).toHaveLength(4);
    for (const s of all.json.sessions) await tb.release(s.session_id);
  });

  it('backpressure: a 503 after acquire_timeout carries Retry-After and the queue length; /health the queue and p50 wait', async () => {
    const held = await Promise.all(Array.from({ length: 4 }, () => tb.acquire()));
    const queued = tb.post('/session/acquire', { acquire_timeout: 3 });
    await eventually(async () => (await tb.health()).queue_length === 1, 10_000, 'the acquire to queue');
    const refused = await tb.post('/session/acquire', { acquire_timeout: 0.3 });
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({ code: 'pool_exhausted', queue_length: 1 });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    await tb.release(held[0]);
    const served = await queued;
    expect(served.status).toBe(200);
    const h = await tb.health();
    expect(typeof h.acquire_wait_p50_ms).toBe('number');
    for (const id of [...held.slice(1), served.json.session_id]) await tb.release(id);
  });
});

const { python, tried } = findPython();
if (!python) {
  it('the pool API client with facts: needs a python3 with aiohttp', () => {
    const missing = `no python interpreter can import aiohttp (apt-get install -y python3-aiohttp); tried ${tried.join('; ')}`;
    if (process.env.CI && process.env.CI !== 'false') throw new Error(`CI must run this test: ${missing}`);
    console.warn(`rollout.test.ts: the facts client SKIPPED: ${missing}`);
  });
}
(python ? describe : describe.skip)(`the pool API client reads answers that carry the facts (${python})`, () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_EXECUTE_FACTS: '1' });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('its BashSession pattern works unchanged', async () => {
    const r = await runPythonClient(python!, path.join(__dirname, '..', 'python', 'facts_client.py'), tb.url, 60_000);
    expect(r.output).toContain('facts ignored: ok');
    expect(r.code).toBe(0);
  }, 90_000);
});

it(`runs on the ${testBackend} backend`, () => expect(['local', 'docker']).toContain(testBackend));
