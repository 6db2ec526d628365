/** broker.close() lets running commands finish (or cuts them after the grace) and leaves no shell behind. */
import fs from 'node:fs';
import { startTestBroker, testBackend, eventually, track, type TestBroker, type HttpResult } from '../helpers/broker';
import { instancePids, procAlive, uniqueMark } from '../../devtools/procs';
import { existsOutside } from '../helpers/dockerFaults';

/** What a client saw of a request cut by the shutdown: a status, or the connection error. */
async function outcome(p: Promise<HttpResult>): Promise<HttpResult | Error> {
  return p.catch((err: Error) => err);
}

/** Shell pid and a background child of each session, printed from inside (works on every backend). */
async function shellPids(tb: TestBroker, ids: string[]): Promise<number[]> {
  const pids: number[] = [];
  for (const id of ids) {
    const r = await tb.exec(id, `echo $$; sleep ${uniqueMark()} >/dev/null 2>&1 & echo $!`);
    pids.push(...r.stdout.trim().split('\n').map(Number));
  }
  return pids;
}

/**
 * Local only: no process of this broker instance (shell, child or escapee) is alive, and no working
 * directory of its leases is left in /tmp/s (on Docker, both went with the containers).
 */
function expectNothingLeft(tb: TestBroker, pids: number[], ids: string[]): void {
  if (testBackend !== 'local') return;
  expect(pids.filter(procAlive)).toEqual([]);
  expect(instancePids(tb.localInstance!)).toEqual([]);
  expect(ids.filter((id) => fs.existsSync(`/tmp/s/${id}`))).toEqual([]);
}

describe('shutdown', () => {
  const started: TestBroker[] = [];
  async function broker(env: Record<string, string>): Promise<TestBroker> {
    const tb = await startTestBroker(env);
    started.push(tb);
    return tb;
  }
  afterAll(async () => {
    await Promise.all(started.map((tb) => tb.close()));
  });

  it('lets a running command finish within the grace, then leaves no shell or directory behind (local: /proc, /tmp/s)', async () => {
    // One container: the second session sees the first one's working directory (with isolation, the container does).
    const tb = await broker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SHUTDOWN_GRACE: '20' });
    const [a, b] = [await tb.acquire(), await tb.acquire()];
    const pids = await shellPids(tb, [a, b]);
    if (testBackend === 'local') expect(instancePids(tb.localInstance!).length).toBeGreaterThanOrEqual(4);

    const running = tb.post(`/session/${a}/execute`, { command: 'touch started; sleep 1; echo finished', timeout: 30 });
    await eventually(() => existsOutside(tb, b, `/tmp/s/${a}/started`), 20_000, 'command started');
    const closing = track(tb.broker.close());

    const r = await running;
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'Success', stdout: 'finished\n', stderr: '', return_code: 0 });
    await closing.promise;
    expectNothingLeft(tb, pids, [a, b]);
    await expect(tb.get('/health')).rejects.toThrow();
  });

  it('cuts a command that outlives the grace, answers its client, and leaves no shell or directory behind (local: /proc, /tmp/s)', async () => {
    const tb = await broker({ BROKER_SHUTDOWN_GRACE: '1' });
    const ids = [await tb.acquire(), await tb.acquire()];
    const pids = await shellPids(tb, ids);
    const running = outcome(tb.post(`/session/${ids[0]}/execute`, { command: 'sleep 60', timeout: 50 }));
    // Running for sure: the session refuses a second command.
    await eventually(async () => (await tb.post(`/session/${ids[0]}/execute`, { command: 'true' })).status === 409, 20_000, 'command running');

    const released = await tb.acquire();
    await tb.release(released); // its cleanup may still be queued when the pool stops
    await tb.broker.close();
    const r = await running;
    if (!(r instanceof Error)) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(typeof r.json.detail).toBe('string');
    }
    expectNothingLeft(tb, pids, [...ids, released]);
  });

  it('turns away waiting and new acquires with 503 (or a closed connection), and close is idempotent', async () => {
    const tb = await broker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_ACQUIRE_TIMEOUT: '30' });
    const holder = await tb.acquire();
    const pids = await shellPids(tb, [holder]);
    const waiter = outcome(tb.post('/session/acquire', {}));
    await eventually(async () => /^broker_acquire_waiting 1$/m.test(await tb.metrics()), 20_000, 'an acquire waiting');

    await Promise.all([tb.broker.close(), tb.broker.close()]);
    const w = await waiter;
    if (!(w instanceof Error)) {
      expect(w.status).toBe(503);
      expect(w.json.detail).toMatch(/shutting down/);
    }
    await expect(tb.post('/session/acquire', {})).rejects.toThrow();
    expectNothingLeft(tb, pids, [holder]);
  });
});
