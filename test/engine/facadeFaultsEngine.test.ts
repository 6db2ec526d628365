/**
 * Fault under every facade at once: the Docker engine restarted (dockerd stopped gracefully, then
 * started again) while a mixed load runs (mixedLoad.ts: pool leases, a warm lifecycle sandbox with
 * an execd command streaming, the workspace running a job with a viewer). On a PRIVATE dockerd
 * (privateDockerd.ts): the shared engine is never touched. Each holder gets a clear answer, /health
 * says the broker cannot serve while the engine is gone, and once it is back the broker serves
 * every facade again with a new generation of containers and nothing of the old one left.
 * daemonRestart.test.ts holds the pool alone through the same faults and a stuck engine.
 * @backend docker
 */
import { startTestBroker, testDeployment, waitFullPool, eventually, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { labelledContainers, watchHealth, within } from '../helpers/dockerFaults';
import { expectLoadLost, expectServing, MIXED_LOAD_POOLS, startMixedLoad, type MixedLoad } from '../helpers/mixedLoad';
import { cleanupLeftovers, PrivateDockerd } from '../helpers/privateDockerd';
import { hostPidsOfContainers } from '../../devtools/privateDockerdCleanup';

const LONG_MS = 120_000;
jest.setTimeout(420_000);
const IMAGE = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
const DEPLOYMENT = testDeployment(`ff-engine-${process.pid}`);

describeDocker('the Docker engine restarted under a mixed load on every facade', () => {
  let daemon: PrivateDockerd | null = null;
  let tb: TestBroker | null = null;
  let load: MixedLoad | null = null;

  beforeAll(async () => {
    await cleanupLeftovers();
    daemon = new PrivateDockerd();
    await daemon.start();
    await daemon.loadImage(IMAGE);
  });

  afterAll(async () => {
    load?.close();
    if (daemon && !daemon.running) await daemon.start().catch(() => undefined);
    await tb?.close().catch(() => undefined);
    await daemon?.teardown();
  });

  /** Every container of the broker on the engine: the default pool's and the warm pool's. */
  const containersNow = async (d: PrivateDockerd): Promise<string[]> =>
    [...(await labelledContainers(d.docker, DEPLOYMENT)), ...(await labelledContainers(d.docker, `${DEPLOYMENT}.warm`))].map((c) => c.Id);

  it.each(['SIGTERM', 'SIGKILL'] as const)('dockerd %s then started again: clear answers, /health says so, every facade serves again', async (signal) => {
    const d = daemon!;
    const b = (tb = await d.withDockerHost(() =>
      startTestBroker({
        BROKER_DEPLOYMENT: DEPLOYMENT,
        BROKER_IMAGE: IMAGE,
        BROKER_POOLS: MIXED_LOAD_POOLS(IMAGE),
        BROKER_CONTAINERS: '2',
        BROKER_SESSIONS_PER_CONTAINER: '2',
        BROKER_HEALTH_INTERVAL: '0.5',
        BROKER_CONTAINER_PING_TIMEOUT: '2',
        BROKER_NETWORK_MODE: 'none', // the private daemon has no bridge
        BROKER_ACQUIRE_TIMEOUT: '3', // an acquire made while the engine is down ends, and soon
      }),
    ));
    await waitFullPool(b, LONG_MS);
    await eventually(async () => (await b.get('/health')).json.pools.warm.available_sessions === 1, LONG_MS, 'the warm pool full');
    load = await startMixedLoad(b);
    const oldIds = await containersNow(d);
    expect(oldIds).toHaveLength(3);

    const watch = watchHealth(b);
    await d.stop(signal);

    // While the engine is gone: every holder is told, /health answers unhealthy, an acquire ends in 503.
    await within(expectLoadLost(b, load), LONG_MS, 'the answers of the lost load');
    await eventually(async () => (await b.get('/health')).status === 503, LONG_MS, '/health reporting the engine gone');
    const acquire = await within(b.post('/session/acquire', {}), LONG_MS, 'an acquire while the engine is down');
    expect([acquire.status, acquire.json.code]).toEqual([503, 'pool_exhausted']);
    const create = await within(b.post('/v1/sandboxes', { extensions: { poolRef: 'warm' }, timeout: 600 }), LONG_MS, 'a sandbox create while the engine is down');
    expect(create.status).toBeGreaterThanOrEqual(400);
    expect(typeof create.json.message).toBe('string');

    await d.start();
    await waitFullPool(b, LONG_MS, { inUse: 1 }); // the workspace holds one slot
    await eventually(async () => (await b.get('/health')).json.pools.warm.available_sessions === 1, LONG_MS, 'the warm pool whole');
    await watch.stop();
    expect(watch.seen).toContain('unhealthy');
    expect(watch.seen).not.toContain('error'); // /health always answered
    await expectServing(b, load);

    // A new generation: nothing of the old one on the engine or on the host.
    await eventually(async () => (await containersNow(d)).every((id) => !oldIds.includes(id)), LONG_MS, 'no container of the old generation');
    await eventually(() => hostPidsOfContainers(oldIds).length === 0, LONG_MS, 'no host process of the old containers');
    load.close();
    load = null;
    const live = await containersNow(d);
    await b.close();
    tb = null;
    // Named with their state: a leftover says which start made it (its name's kind and count) and how far it got.
    const left = [...(await labelledContainers(d.docker, DEPLOYMENT)), ...(await labelledContainers(d.docker, `${DEPLOYMENT}.warm`))];
    expect(left.map((c) => `${c.Names.join(',')} ${c.State} ${c.Status}`)).toEqual([]);
    expect(hostPidsOfContainers(live)).toEqual([]);
  });
});
