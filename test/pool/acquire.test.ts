/** Acquire queues FIFO, forgets clients that leave, writes files, runs startup commands. */
import { startTestBroker, testBackend, eventually, metricValue, track, b64, type TestBroker, type HttpResult, testDeployment, testLocalRoot } from '../helpers/broker';

/** Acquire requests waiting in the pool's queue, as /metrics reports them. */
async function waiting(tb: TestBroker): Promise<number> {
  return metricValue(await tb.metrics(), 'broker_acquire_waiting');
}

async function waitForQueue(tb: TestBroker, length: number): Promise<void> {
  await eventually(async () => (await waiting(tb)) === length, 20_000, `${length} acquire(s) waiting`);
}

describe('acquire on a full pool (1x1)', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_ACQUIRE_TIMEOUT: '30' });
  });
  afterAll(async () => {
    await tb.close();
  });

  it('serves waiting clients first come, first served', async () => {
    const a = await tb.acquire();
    const b = track(tb.post('/session/acquire', {}));
    await waitForQueue(tb, 1);
    const c = track(tb.post('/session/acquire', {}));
    await waitForQueue(tb, 2);

    await tb.release(a);
    const gotB: HttpResult = await b.promise;
    expect(gotB.status).toBe(200);
    // B holds the only session, so C can only still be waiting.
    expect(c.settled()).toBe(false);
    expect(await waiting(tb)).toBe(1);
    const h = await tb.health();
    expect(h.in_use_sessions).toBe(1);
    expect((await tb.exec(gotB.json.session_id, 'echo b')).stdout).toBe('b\n');

    await tb.release(gotB.json.session_id);
    const gotC = await c.promise;
    expect(gotC.status).toBe(200);
    expect(gotC.json.session_id).not.toBe(gotB.json.session_id);
    await tb.release(gotC.json.session_id);
    await tb.waitAllAvailable();
  });

  it('forgets a waiting client that disconnects: the next acquirer gets the session at once', async () => {
    const holder = await tb.acquire();
    const controller = new AbortController();
    const ghost = tb.postAbortable('/session/acquire', {}, controller.signal);
    await waitForQueue(tb, 1);
    controller.abort();
    await expect(ghost).rejects.toThrow();
    await waitForQueue(tb, 0);

    await tb.release(holder);
    await tb.waitAllAvailable();
    // The session went back to available, not to the ghost: the next client takes it without waiting.
    const next = await tb.post('/session/acquire', {});
    expect(next.status).toBe(200);
    const h = await tb.health();
    expect(h.in_use_sessions).toBe(1);
    expect(h.available_sessions).toBe(0);
    await tb.release(next.json.session_id);
    await tb.waitAllAvailable();
  });

  it('a client that disconnects in the middle of the queue does not hold up those behind it', async () => {
    const holder = await tb.acquire();
    const controller = new AbortController();
    const ghost = tb.postAbortable('/session/acquire', {}, controller.signal);
    ghost.catch(() => undefined);
    await waitForQueue(tb, 1);
    const behind = track(tb.post('/session/acquire', {}));
    await waitForQueue(tb, 2);
    controller.abort();
    await waitForQueue(tb, 1);
    await tb.release(holder);
    const got = await behind.promise;
    expect(got.status).toBe(200);
    expect((await tb.health()).in_use_sessions).toBe(1);
    await tb.release(got.json.session_id);
    await tb.waitAllAvailable();
  });
});

describe('acquire timeout', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_ACQUIRE_TIMEOUT: '1' });
  });
  afterAll(async () => {
    await tb.close();
  });

  it('answers 503 with a detail when no session frees up in time, and the queue is left empty', async () => {
    const holder = await tb.acquire();
    const r = await tb.post('/session/acquire', {});
    expect(r.status).toBe(503);
    expect(r.json.detail).toMatch(/No session available within 1 seconds/);
    expect(r.headers['retry-after']).toBe('1'); // nothing was done: the client may send it again
    expect(await waiting(tb)).toBe(0);
    expect(metricValue(await tb.metrics(), 'broker_acquire_wait_seconds_count', { outcome: 'timeout' })).toBeGreaterThanOrEqual(1);
    // The holder is untouched.
    expect((await tb.exec(holder, 'echo still')).stdout).toBe('still\n');
    await tb.release(holder);
    await tb.waitAllAvailable();
    const again = await tb.acquire();
    await tb.release(again);
  });
});

describe('acquire with files and startup commands', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker();
  });
  afterAll(async () => {
    await tb.close();
  });

  it('writes files (relative paths, subdirectories, binary) before the session starts', async () => {
    const binary = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0]);
    const big = Buffer.alloc(300_000, 'z');
    const r = await tb.post('/session/acquire', {
      files: {
        'script.py': b64('print("hello")'),
        'data/input.txt': b64('line1\nline2'),
        'a/b/c/deep.bin': binary.toString('base64'),
        './dot/x.txt': b64('dot'),
        'big.txt': big.toString('base64'),
        'empty.txt': '',
      },
    });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json)).toEqual(['session_id']);
    const id = r.json.session_id;
    const ls = await tb.exec(id, 'find . -type f | sort; cat script.py; echo; cat data/input.txt; echo; base64 -w0 a/b/c/deep.bin; echo; wc -c < big.txt; wc -c < empty.txt');
    expect(ls.stdout).toBe(
      ['./a/b/c/deep.bin', './big.txt', './data/input.txt', './dot/x.txt', './empty.txt', './script.py', 'print("hello")', 'line1', 'line2', binary.toString('base64'), '300000', '0', ''].join(
        '\n',
      ),
    );
    await tb.release(id);
  });

  it('runs startup_commands in order, returns their results, and their state holds for later executes', async () => {
    const r = await tb.post('/session/acquire', {
      files: { 'setup/values.txt': b64('42\n') },
      startup_commands: ['export FROM_STARTUP=yes; mkdir -p work', 'cd work && echo "in $(basename $PWD)"', 'echo err >&2; false', 'greet() { echo "hi $1"; }; echo "$(cat ../setup/values.txt)"'],
    });
    expect(r.status).toBe(200);
    const id = r.json.session_id;
    expect(typeof id).toBe('string');
    expect(r.json.startup_results).toEqual([
      { status: 'Success', stdout: '', stderr: '', return_code: 0 },
      { status: 'Success', stdout: 'in work\n', stderr: '', return_code: 0 },
      { status: 'Failed', stdout: '', stderr: 'err\n', return_code: 1 },
      { status: 'Success', stdout: '42\n', stderr: '', return_code: 0 },
    ]);
    expect(await tb.exec(id, 'echo "$FROM_STARTUP $PWD"; greet you')).toEqual({
      status: 'Success',
      stdout: `yes /tmp/s/${id}/work\nhi you\n`,
      stderr: '',
      return_code: 0,
    });
    await tb.release(id);
  });

  it('an empty startup_commands list and an empty body are both a plain acquire', async () => {
    for (const body of [{ startup_commands: [] }, { files: {} }, undefined]) {
      const r = await tb.post('/session/acquire', body);
      expect(r.status).toBe(200);
      expect(r.json.session_id).toMatch(/^\S+$/);
      await tb.release(r.json.session_id);
    }
    const raw = await tb.postRaw('/session/acquire', '');
    expect(raw.status).toBe(200);
    await tb.release(raw.json.session_id);
  });

  it('a startup command that kills its shell fails the acquire (4xx with detail) and the session comes back', async () => {
    const before = await tb.waitAllAvailable();
    const r = await tb.post('/session/acquire', { startup_commands: ['echo fine', 'kill -9 $$', 'echo never'] });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(r.json.detail).toMatch(/startup_commands\[1\]/);
    expect(r.json.session_id).toBeUndefined();
    const after = await tb.waitAllAvailable();
    expect(after.total_sessions).toBe(before.total_sessions);
  });

  it('a startup command that fails (even `exit 3`) is just a result: the rest run and the lease is given', async () => {
    const r = await tb.post('/session/acquire', { startup_commands: ['exit 3', 'echo after-exit'] });
    expect(r.status).toBe(200);
    expect(r.json.startup_results).toEqual([
      { status: 'Failed', stdout: '', stderr: '', return_code: 3 },
      { status: 'Success', stdout: 'after-exit\n', stderr: '', return_code: 0 },
    ]);
    await tb.release(r.json.session_id);
  });
});

/**
 * A session that fails while an acquire prepares it (its shell dies, or its files cannot be written)
 * is the pool's problem, not the client's: the acquire tries another slot; the pool API has no 410 for
 * acquire. Faults are injected for real around the real backend: the shell is really killed. The
 * acquires give files: a slot's directory is made by its rebuild, so an acquire without files asks
 * the backend for nothing; the faults hit only writes with files, never the rebuilds.
 */
describe('acquire when the session it got fails while being prepared', () => {
  let tb: TestBroker;
  let inject: 'kill-shell' | 'fail-always' | null = null;
  beforeAll(async () => {
    const { loadConfig } = await import('../../src/config/config');
    const { createBackend } = await import('../../src/broker');
    const env = { ...process.env, BROKER_BACKEND: testBackend, BROKER_DEPLOYMENT: testDeployment(`test-${process.pid}-prepare`), BROKER_LOCAL_ROOT: testLocalRoot('prepare') };
    const backend = createBackend(loadConfig({ ...env, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' }));
    const prepare = backend.prepareWorkdir.bind(backend);
    backend.prepareWorkdir = async (container, dir, files) => {
      const mode = files.length > 0 ? inject : null;
      if (mode === 'fail-always') throw new Error('injected: the workdir cannot be created');
      await prepare(container, dir, files);
      if (mode === 'kill-shell') {
        inject = null;
        // The shell of the slot this lease got: the only one IN_USE.
        const slot = tb.broker.pool.containers.flatMap((c) => c.slots).find((s) => s.lease?.workdir === dir);
        expect(slot).toBeDefined();
        await slot!.session!.shell.close();
      }
    };
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_ACQUIRE_TIMEOUT: '30' }, { backend });
  });
  afterAll(async () => {
    await tb.close();
  });

  it('its shell killed during the acquire: the client gets another, working session', async () => {
    inject = 'kill-shell';
    const r = await tb.post('/session/acquire', { files: { 'a.txt': b64('a') } });
    expect(inject).toBeNull(); // the fault did happen
    expect(r.status).toBe(200);
    const id = r.json.session_id as string;
    expect(await tb.exec(id, 'pwd; cat a.txt')).toEqual({ status: 'Success', stdout: `/tmp/s/${id}\na`, stderr: '', return_code: 0 });
    await tb.release(id);
    await tb.waitAllAvailable();
  });

  it('every attempt fails: 503 session_unavailable with the reason, nothing held, the pool intact', async () => {
    inject = 'fail-always';
    const r = await tb.post('/session/acquire', { files: { 'a.txt': b64('a') } });
    inject = null;
    expect(r.status).toBe(503);
    expect(r.json.code).toBe('session_unavailable');
    expect(r.json.detail).toMatch(/injected: the workdir cannot be created/);
    const h = await tb.waitAllAvailable();
    expect(h.in_use_sessions).toBe(0);
    const id = await tb.acquire();
    expect((await tb.exec(id, 'echo ok')).stdout).toBe('ok\n');
    await tb.release(id);
  });
});
