/**
 * Fault on the /v1 lifecycle API: a sandbox's container killed under it (docker kill), a warm one
 * (a whole container of a pool) and a dedicated one (a container of its own), each while an execd
 * command streams in it. The command's stream ends instead of hanging, the sandbox reads Failed with
 * the reason, its execd answers 410 sandbox_failed, a new sandbox of each kind works, and the warm
 * pool heals to full. Every wait is on a state.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { containerExists, removeLabelledContainers, untilRunningIn } from '../helpers/dockerFaults';
import { execdBase, meaningful, startSse, textOf } from '../helpers/execdClient';

const LONG = 90_000;
jest.setTimeout(300_000);
const DEPLOYMENT = testDeployment(`ff-lifecycle-${process.pid}`);
const WARM_IMAGE = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
/** An image no pool serves: its sandboxes get a container of their own. */
const OTHER_IMAGE = WARM_IMAGE.startsWith('bash-broker-sandbox') ? 'bash-broker-test:latest' : 'bash-broker-sandbox:latest';
const docker = new Dockerode();

describeDocker('docker: a lifecycle sandbox whose container is killed', () => {
  let tb: TestBroker;

  beforeAll(async () => {
    tb = await startTestBroker({
      BROKER_DEPLOYMENT: DEPLOYMENT,
      BROKER_POOLS: JSON.stringify({ warm: { image: WARM_IMAGE, containers: 1, sessions_per_container: 1 } }),
      BROKER_SANDBOX_MAX_DEDICATED: '2',
      BROKER_HEALTH_INTERVAL: '0.5',
      BROKER_CONTAINER_PING_TIMEOUT: '2',
    });
    await eventually(async () => (await tb.get('/health')).json.pools.warm.available_sessions === 1, LONG, 'the warm pool full');
  });

  afterAll(async () => {
    await tb?.close();
    await removeLabelledContainers(docker, DEPLOYMENT);
  });

  async function create(image: string): Promise<string> {
    const r = await tb.post('/v1/sandboxes', { image: { uri: image }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600, resourceLimits: {} });
    if (r.status !== 202) throw new Error(`create answered ${r.status}: ${r.text}`);
    return r.json.id as string;
  }

  const containerOf = (id: string): string => tb.broker.directory.resolve(id).container.id;

  /** A new sandbox of `image` runs a command through execd, and is deleted. */
  async function aNewSandboxWorks(image: string): Promise<void> {
    const id = await create(image);
    const run = await startSse(`${execdBase(tb.url, id)}/command`, { command: 'echo fresh' });
    await run.done;
    expect(textOf(run.events, 'stdout')).toBe('fresh');
    expect((await tb.request('DELETE', `/v1/sandboxes/${id}`)).status).toBe(204);
  }

  it.each([
    ['warm', WARM_IMAGE],
    ['dedicated', OTHER_IMAGE],
  ])('a %s sandbox: its running command ends, it reads Failed, execd answers 410, a new one works', async (kind, image) => {
    const id = await create(image);
    const cid = containerOf(id);
    const run = await startSse(`${execdBase(tb.url, id)}/command`, { command: 'echo started; sleep 300; echo finished' });
    expect(run.status).toBe(200);
    await eventually(() => textOf(run.events, 'stdout').includes('started'), LONG, 'the command started');
    await untilRunningIn(docker, cid, 'sleep 300', LONG);

    await docker.getContainer(cid).kill();

    // The command's stream ends (no hang), with an error event, not a fake success.
    await run.done;
    const events = meaningful(run.events);
    expect(textOf(events, 'stdout')).not.toContain('finished');
    const last = events[events.length - 1];
    expect(last.type).toBe('error');
    expect(typeof last.error?.evalue).toBe('string');

    // The sandbox says what happened.
    let view: Record<string, any> = {}; // eslint-disable-line @typescript-eslint/no-explicit-any
    await eventually(
      async () => {
        view = (await tb.get(`/v1/sandboxes/${id}`)).json;
        return view.status?.state === 'Failed';
      },
      LONG,
      () => `the ${kind} sandbox Failed (last: ${JSON.stringify(view)})`,
    );
    expect(view.status.reason).toBe('runtime_error');
    expect(view.status.message).toMatch(/its container failed/);

    // Its execd answers clearly: gone, in OpenSandbox's envelope, every time.
    for (const path of ['/ping', '/command']) {
      const r = path === '/ping' ? await tb.get(`/sandboxes/${id}/execd${path}`) : await tb.post(`/sandboxes/${id}/execd${path}`, { command: 'echo hi' });
      expect(r.status).toBe(410);
      expect(r.json.code).toBe('RUNTIME_ERROR');
      expect(r.json.message).toMatch(new RegExp(`Sandbox ${id} failed \\(its container failed: .+\\); create a new one`));
    }
    // Deleting a failed sandbox is fine (idempotent end), and it stays Failed.
    expect((await tb.request('DELETE', `/v1/sandboxes/${id}`)).status).toBe(204);
    expect((await tb.get(`/v1/sandboxes/${id}`)).json.status.state).toBe('Failed');

    // The broker heals: the killed container is removed, the warm pool is whole, a new sandbox works.
    await eventually(async () => !(await containerExists(docker, cid)), LONG, 'the killed container removed');
    await eventually(async () => (await tb.get('/health')).json.pools.warm.available_sessions === 1, LONG, 'the warm pool whole');
    await aNewSandboxWorks(image);
    await eventually(async () => (await tb.get('/health')).json.pools.warm.available_sessions === 1, LONG, 'the warm pool whole again');
    expect(tb.broker.sandboxes.counts()).toEqual({ running: 0, paused: 0, pooled: 0, dedicated: 0 });
  });
});
