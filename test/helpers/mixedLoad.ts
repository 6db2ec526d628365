/**
 * A mixed load on one broker, for the fault tests of the facades (the facadeFaults suites, each in
 * its feature's folder): a pool lease running a command and an idle one, a warm lifecycle sandbox with an execd command streaming,
 * and the default workspace running a job with a viewer on its events. Every piece is reached over
 * HTTP and WebSocket only, so the broker may be in this process or a process of its own; each is
 * running for sure (a state seen, not a delay) when `startMixedLoad` returns. Then the checks of
 * what each holder saw of a fault, and of a healed broker.
 *
 * The broker needs a warm pool named `warm` of whole containers (MIXED_LOAD_POOLS) and at least two
 * sessions free in its default pool besides the workspace's.
 */
import { eventually, type HttpResult } from './broker';
import { execdBase, meaningful, startSse, textOf, type SseRun } from './execdClient';
import { linesOf, openEvents, type EventClient } from './workspaceClient';

/** What the load needs of a broker: its URL and two verbs. */
export interface BrokerClient {
  url: string;
  post(path: string, body?: unknown): Promise<HttpResult>;
  get(path: string): Promise<HttpResult>;
}

export const MIXED_LOAD_POOLS = (image: string): string => JSON.stringify({ warm: { image, containers: 1, sessions_per_container: 1 } });

export interface MixedLoad {
  /** A pool lease whose command (`sleep 300`) runs, and its pending answer. */
  lease: string;
  leaseRun: Promise<HttpResult | Error>;
  /** A pool lease holding shell state, idle. */
  idleLease: string;
  /** A warm lifecycle sandbox whose execd command streams. */
  sandbox: string;
  sandboxRun: SseRun;
  /** The default workspace's running job, and a viewer of its events. */
  workspaceJob: string;
  viewer: EventClient;
  close(): void;
}

const LONG_MS = 90_000;
/** A create of a sandbox from the warm pool (its image and entrypoint are the pool's). */
const WARM_SANDBOX = { extensions: { poolRef: 'warm' }, timeout: 600 };
const RUNNING = 'echo started; sleep 300; echo finished';

export async function startMixedLoad(b: BrokerClient): Promise<MixedLoad> {
  const acquire = async (): Promise<string> => {
    const r = await b.post('/session/acquire', {});
    if (r.status !== 200) throw new Error(`acquire answered ${r.status}: ${r.text}`);
    return r.json.session_id as string;
  };
  const idleLease = await acquire();
  const kept = await b.post(`/session/${idleLease}/execute`, { command: 'export KEEP=1; echo up' });
  if (kept.json?.stdout !== 'up\n') throw new Error(`the idle lease's first command answered ${kept.status}: ${kept.text}`);
  const lease = await acquire();
  const leaseRun = b.post(`/session/${lease}/execute`, { command: RUNNING, timeout: 600 }).catch((err: Error) => err);
  // Running for sure: its shell refuses a second command.
  await eventually(async () => (await b.post(`/session/${lease}/execute`, { command: 'true' })).status === 409, LONG_MS, 'the lease command running');

  const created = await b.post('/v1/sandboxes', WARM_SANDBOX);
  if (created.status !== 202) throw new Error(`sandbox create answered ${created.status}: ${created.text}`);
  const sandbox = created.json.id as string;
  const sandboxRun = await startSse(`${execdBase(b.url, sandbox)}/command`, { command: RUNNING });
  // A broker that dies cuts the stream: whoever awaits `done` sees that, it is no unhandled rejection.
  sandboxRun.done.catch(() => undefined);
  await eventually(() => textOf(sandboxRun.events, 'stdout').includes('started'), LONG_MS, 'the sandbox command running');

  const logs = (await b.get('/api/workspace/logs?offset=0&limit=1')).json as { seq_id: number }[];
  const viewer = await openEvents(b, `/ws/workspace?since=${logs[0]?.seq_id ?? 0}`);
  const job = await b.post('/api/execute', { command: RUNNING, wait: 0 });
  if (job.status !== 200) throw new Error(`workspace execute answered ${job.status}: ${job.text}`);
  const workspaceJob = job.json.job_id as string;
  await eventually(async () => (await linesOf(b, workspaceJob)).includes('started'), LONG_MS, 'the workspace job running');
  return { lease, leaseRun, idleLease, sandbox, sandboxRun, workspaceJob, viewer, close: () => viewer.close() };
}

/**
 * What each holder saw of a fault that took the containers with it (the engine went away): the lease
 * command a 410, the idle lease a 410, the sandbox's stream an error and the sandbox Failed, the
 * workspace job an exit event saying its slot was lost. Each answer carries its reason.
 */
export async function expectLoadLost(b: BrokerClient, load: MixedLoad): Promise<void> {
  const run = await load.leaseRun;
  if (run instanceof Error) throw run;
  expect(run.status).toBe(410);
  expect(run.json.detail).toMatch(/broken/);
  expect(run.text).not.toContain('finished');
  const idle = await b.post(`/session/${load.idleLease}/execute`, { command: 'echo $KEEP' });
  expect(idle.status).toBe(410);
  expect(idle.json.detail).toMatch(/broken/);

  await load.sandboxRun.done;
  const events = meaningful(load.sandboxRun.events);
  expect(textOf(events, 'stdout')).not.toContain('finished');
  expect(events[events.length - 1].type).toBe('error');
  let view: HttpResult | null = null;
  await eventually(
    async () => {
      view = await b.get(`/v1/sandboxes/${load.sandbox}`);
      return view.json?.status?.state === 'Failed';
    },
    LONG_MS,
    () => `the sandbox Failed (last: ${view?.text})`,
  );
  expect(view!.json.status).toMatchObject({ reason: 'runtime_error', message: expect.stringMatching(/its container failed/) });
  const execd = await b.get(`/sandboxes/${load.sandbox}/execd/ping`);
  expect([execd.status, execd.json.code]).toEqual([410, 'RUNTIME_ERROR']);

  const exit = await load.viewer.waitFor((e) => e.type === 'exit' && e.job_id === load.workspaceJob, "the workspace job's exit event", LONG_MS);
  expect(exit.returncode).toBeNull();
  expect(exit.reason).toMatch(/slot was lost/);
}

/**
 * A healed broker: new leases run commands, the lost ones release cleanly, a new warm sandbox runs an
 * execd command, the workspace (moved to a new slot) runs one, and the viewer saw it move.
 */
export async function expectServing(b: BrokerClient, load: MixedLoad | null): Promise<void> {
  const lease = (await b.post('/session/acquire', {})).json.session_id as string;
  expect((await b.post(`/session/${lease}/execute`, { command: 'echo ok' })).json.stdout).toBe('ok\n');
  expect((await b.post(`/session/${lease}/release`)).status).toBe(200);
  for (const id of load ? [load.lease, load.idleLease] : []) expect((await b.post(`/session/${id}/release`)).status).toBe(200);

  const created = await b.post('/v1/sandboxes', WARM_SANDBOX);
  expect(created.status).toBe(202);
  const run = await startSse(`${execdBase(b.url, created.json.id)}/command`, { command: 'echo fresh' });
  await run.done;
  expect(textOf(run.events, 'stdout')).toBe('fresh');
  const deleted = await fetch(`${b.url}/v1/sandboxes/${created.json.id}`, { method: 'DELETE' });
  expect(deleted.status).toBe(204);

  if (load) await load.viewer.waitFor((e) => e.type === 'workspace_moved', 'the workspace_moved event', LONG_MS);
  const after = await b.post('/api/execute', { command: 'echo fresh' });
  expect([after.status, after.json.returncode, after.json.stdout]).toEqual([200, 0, 'fresh\n']);
}
