/**
 * A lease taken out of the pool (a warm lifecycle sandbox's, a workspace's) lives until its owner ends
 * it: the pool's idle timeout (3 s here) never reclaims it, whatever calls were made on it. Each
 * case first makes every call that renews a lease (the create's env export, execd's ping, commands,
 * an interrupt and files, and the pool API's execute, heartbeat and history on the lease's own id),
 * then acquires an ordinary lease of the same pool and waits for the reaper to take that one back:
 * the pass that does is past the idle timeout of the taken-out lease too, which was quiet longer.
 */
import { Sandbox, type ConnectionConfigOptions } from '@alibaba-group/opensandbox';
import { startTestBroker, testBackend, eventually, type TestBroker, type HttpResult } from '../helpers/broker';

const docker = testBackend === 'docker';
const warmImage = docker ? (process.env.BROKER_IMAGE ?? 'bash-broker-test:latest') : 'warm-image:1';
const texts = (run: { logs: { stdout: { text: string }[] } }): string[] => run.logs.stdout.map((m) => m.text);
type Reclaimed = { idle_timeout: number; lease_ttl: number; operator: number };

describe(`a lease taken out of the pool outlives the idle timeout until its owner ends it (${testBackend})`, () => {
  let tb: TestBroker;
  let connection: ConnectionConfigOptions;
  const warmReclaimed = async (): Promise<Reclaimed> => (await tb.get('/health')).json.pools.warm.reclaimed_sessions;
  const mainReclaimed = async (): Promise<Reclaimed> => (await tb.health()).reclaimed_sessions;

  /** An ordinary lease of `pool`, acquired now, and the reaper's pass that takes it back as idle. */
  async function reaperPassAfterNow(pool: string | undefined, reclaimed: () => Promise<Reclaimed>): Promise<string> {
    const before = (await reclaimed()).idle_timeout;
    const ordinary = await tb.acquire(pool === undefined ? {} : { pool });
    await eventually(async () => (await reclaimed()).idle_timeout > before, 60_000, 'the ordinary lease reclaimed as idle');
    const gone = await tb.post(`/session/${ordinary}/execute`, { command: 'true' });
    expect({ status: gone.status, reclaimed: gone.json.reclaimed }).toEqual({ status: 400, reclaimed: 'idle_timeout' });
    return ordinary;
  }

  beforeAll(async () => {
    tb = await startTestBroker({
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '2',
      BROKER_SESSION_IDLE_TIMEOUT: '3',
      BROKER_POOLS: JSON.stringify({ warm: { image: warmImage, containers: 2, sessions_per_container: 1 } }),
    });
    connection = { domain: tb.url, disableMetrics: true };
    await eventually(async () => (await tb.get('/health')).json.pools.warm.available_sessions === 2, 120_000, 'the warm pool full');
  }, 180_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('a warm /v1 sandbox created with env answers after the reaper took back a lease quiet for less time', async () => {
    const sandbox = await Sandbox.create({ connectionConfig: connection, image: warmImage, env: { GREETING: 'still here' } });
    const record = tb.broker.sandboxes.get(sandbox.id);
    const leaseId = record.place.kind === 'pool' ? record.place.taken.sessionId : null;
    try {
      if (leaseId === null) throw new Error(`the sandbox is not a warm one: ${record.place.kind}`);
      const root = tb.broker.directory.resolve(sandbox.id).root.replace(/\/$/, '');

      // Every call that renews a lease, on this one: execd's ping, command, interrupt and files...
      expect(await sandbox.isHealthy()).toBe(true);
      expect(texts(await sandbox.commands.run('echo "$GREETING"'))).toEqual(['still here']);
      const background = await sandbox.commands.run('sleep 600', { background: true });
      await sandbox.commands.interrupt(background.id!);
      await eventually(async () => !(await sandbox.commands.getCommandStatus(background.id!)).running, 30_000, 'the interrupted command to end');
      await sandbox.files.writeFiles([{ path: `${root}/kept.txt`, data: 'kept' }]);
      // ...and the pool API's on the lease's own id.
      expect((await tb.exec(leaseId, 'echo "$GREETING"')).stdout).toBe('still here\n');
      const calls: HttpResult[] = [await tb.post(`/session/${leaseId}/heartbeat`), await tb.get(`/session/${leaseId}/history`)];
      expect(calls.map((r) => r.status)).toEqual([200, 200]);

      await reaperPassAfterNow('warm', warmReclaimed);
      // The ordinary lease alone: the sandbox's, quiet longer, was passed over.
      expect(await warmReclaimed()).toEqual({ idle_timeout: 1, lease_ttl: 0, operator: 0 });
      expect((await sandbox.getInfo()).status.state).toBe('Running');
      expect(texts(await sandbox.commands.run(`echo "$GREETING"; cat ${root}/kept.txt`))).toEqual(['still here', 'kept']);
      expect((await tb.exec(leaseId, 'true')).return_code).toBe(0);
    } finally {
      await sandbox.kill();
      await sandbox.close();
    }
    // Its owner ended it: released, not reclaimed.
    const ended = await tb.post(`/session/${leaseId}/execute`, { command: 'true' });
    expect({ status: ended.status, code: ended.json.code, reclaimed: ended.json.reclaimed }).toEqual({ status: 400, code: 'session_not_in_use', reclaimed: undefined });
  }, 180_000);

  it("a workspace's lease outlives the idle timeout past its commands, and ends with the workspace", async () => {
    const created = await tb.post('/workspaces', {});
    expect(created.status).toBe(201);
    const prefix = `/workspaces/${created.json.workspace_id}`;
    const run = async (command: string): Promise<HttpResult> => tb.post(`${prefix}/api/execute`, { command });
    expect((await run('echo first')).json).toMatchObject({ returncode: 0, stdout: 'first\n' });
    expect((await tb.post(`${prefix}/api/interrupt`, {})).status).toBe(200);

    await reaperPassAfterNow(undefined, mainReclaimed);
    expect(await mainReclaimed()).toEqual({ idle_timeout: 1, lease_ttl: 0, operator: 0 });
    expect((await run('echo second')).json).toMatchObject({ returncode: 0, stdout: 'second\n' });
    expect((await tb.health()).in_use_sessions).toBe(1);

    expect((await tb.request('DELETE', prefix)).status).toBe(200);
    await eventually(async () => (await tb.health()).in_use_sessions === 0, 60_000, 'the workspace slot given back');
    expect(await mainReclaimed()).toEqual({ idle_timeout: 1, lease_ttl: 0, operator: 0 });
  }, 180_000);
});
