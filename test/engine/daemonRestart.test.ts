/**
 * Fault: the Docker daemon itself goes away under a working broker and comes back, or stops answering. Injected for real
 * on a PRIVATE dockerd (privateDockerd.ts) so the shared engine, its containers and other tests are
 * never touched. Three faults:
 *  - SIGTERM: dockerd's graceful shutdown stops every container (live-restore is off) and exits;
 *  - SIGKILL: dockerd and its managed containerd die at once, the containers and their shims outlive
 *    them; the next dockerd kills those containers (they stay, exited) on start;
 *  - SIGSTOP (not down, stuck: it answers nothing, as when it deadlocks): a container start fails at
 *    BROKER_CONTAINER_START_TIMEOUT, leases go on, a container that dies meanwhile is still seen
 *    (through its control lane), and once the engine answers the pool heals with nothing left over.
 * Either way the holders of leases get a clear error, /health says so while the engine is gone,
 * acquires do not hang, and once the engine is back the pool heals to full size, no container of
 * the old generation is left and no process of it survives on the host.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { everySessionWorks, execIn, labelledContainers, poolContainerIds, watchHealth, within } from '../helpers/dockerFaults';
import { cleanupLeftovers, PrivateDockerd } from '../helpers/privateDockerd';
import { hostPidsOfContainers } from '../../devtools/privateDockerdCleanup';

const LONG_MS = 90_000;
const sharedEngine = new Dockerode();
jest.setTimeout(300_000);
const IMAGE = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
const DEPLOYMENT = testDeployment(`daemon-restart-${process.pid}`);
const ENV: Record<string, string> = {
  BROKER_DEPLOYMENT: DEPLOYMENT,
  BROKER_IMAGE: IMAGE,
  BROKER_CONTAINERS: '2',
  BROKER_SESSIONS_PER_CONTAINER: '2',
  BROKER_HEALTH_INTERVAL: '0.5',
  BROKER_CONTAINER_PING_TIMEOUT: '2',
  BROKER_NETWORK_MODE: 'none', // the private daemon has no bridge
  BROKER_ACQUIRE_TIMEOUT: '3', // an acquire made while the engine is down must end, and soon
};

describeDocker('the Docker daemon restarts under the broker: the pool heals', () => {
  let daemon: PrivateDockerd | null = null;
  let tb: TestBroker | null = null;

  beforeAll(async () => {
    await cleanupLeftovers();
    daemon = new PrivateDockerd();
    await daemon.start();
    await daemon.loadImage(IMAGE);
  });

  afterEach(async () => {
    // Normally closed by the test; this is for one that failed half-way (the engine may be down,
    // or stopped).
    if (daemon?.pid && daemon.running) process.kill(daemon.pid, 'SIGCONT');
    if (daemon && !daemon.running) await daemon.start().catch(() => undefined);
    await tb?.close().catch(() => undefined);
    tb = null;
  });

  afterAll(async () => {
    await daemon?.teardown();
    daemon = null;
  });

  /** A warm broker whose backend talks to the private daemon (checked, not assumed). */
  async function startBroker(d: PrivateDockerd): Promise<TestBroker> {
    // startTestBroker builds the backend (and its dockerode client) before its first await.
    const b = await d.withDockerHost(() => startTestBroker(ENV));
    tb = b;
    await b.waitAllAvailable(LONG_MS);
    // Its containers are on the private daemon, none on the shared engine.
    expect((await labelledContainers(d.docker, DEPLOYMENT)).map((c) => c.Id).sort()).toEqual(poolContainerIds(b).sort());
    expect(await labelledContainers(sharedEngine, DEPLOYMENT)).toHaveLength(0);
    return b;
  }

  async function restartUnderLeases(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const d = daemon!;
    const b = await startBroker(d);
    const oldIds = poolContainerIds(b);
    const idle = await b.acquire();
    const busy = await b.acquire();
    expect((await b.exec(idle, 'export KEEP=1; echo up')).stdout).toBe('up\n');
    const host = (await b.exec(busy, 'echo $HOSTNAME')).stdout.trim();
    const busyContainer = oldIds.find((id) => id.startsWith(host))!;
    expect(busyContainer).toBeDefined();
    const running = b.post(`/session/${busy}/execute`, { command: 'sleep 60; echo finished', timeout: 120 });
    await eventually(async () => (await execIn(d.docker, busyContainer, ['ps'])).out.includes('sleep 60'), LONG_MS, 'sleep 60 running');

    const watch = watchHealth(b);
    await d.stop(signal);

    // The running command's holder learns its shell is gone: a clear error, not a hang or a fake success.
    const r = await within(running, LONG_MS, 'the running execute');
    expect(r.status).toBe(410);
    expect(r.json.detail).toMatch(/broken/);
    expect(r.text).not.toContain('finished');
    // The idle holder's state went with the engine: 410 too, and again (not a one-off).
    for (let i = 0; i < 2; i++) {
      const next = await within(b.post(`/session/${idle}/execute`, { command: 'echo $KEEP' }), LONG_MS, 'execute on a lost lease');
      expect(next.status).toBe(410);
      expect(next.json.detail).toMatch(/broken/);
    }

    // /health answers, and says the broker cannot serve (503 is how "unhealthy" is answered).
    let last: { status: number; body: unknown } | null = null;
    await eventually(
      async () => {
        const h = await b.get('/health');
        last = { status: h.status, body: h.json };
        return h.status === 503 && h.json?.status === 'unhealthy' && h.json.healthy_containers === 0 && h.json.available_sessions === 0;
      },
      LONG_MS,
      () => `/health reporting the engine gone (last: ${JSON.stringify(last)})`,
    );
    // An acquire while the engine is down waits its acquire timeout (3 s here), then 503: no hang.
    const acquire = await within(b.post('/session/acquire', {}), LONG_MS, 'acquire while the engine is down');
    expect(acquire.status).toBe(503);
    expect(acquire.json.code).toBe('pool_exhausted');

    if (signal === 'SIGKILL') {
      // What makes this fault different: the old containers (shims, init, bash, the sleep) outlive dockerd.
      expect(hostPidsOfContainers([busyContainer]).length).toBeGreaterThan(0);
    }
    await d.start();

    await b.waitAllAvailable(LONG_MS);
    await watch.stop();
    expect(watch.seen).toContain('unhealthy');
    expect(watch.seen).not.toContain('error'); // /health always answered

    // A new generation: no container of the old one left (running or exited), none of its processes.
    const now = poolContainerIds(b);
    for (const id of oldIds) expect(now).not.toContain(id);
    await eventually(
      async () => (await labelledContainers(d.docker, DEPLOYMENT)).every((c) => !oldIds.includes(c.Id)),
      LONG_MS,
      () => `no container of the old generation (old: ${oldIds.map((id) => id.slice(0, 12))})`,
    );
    const live = await labelledContainers(d.docker, DEPLOYMENT);
    expect(live.map((c) => c.Id).sort()).toEqual([...now].sort());
    expect(live.every((c) => c.State === 'running')).toBe(true);
    await eventually(() => hostPidsOfContainers(oldIds).length === 0, LONG_MS, 'no host process of the old containers');

    expect((await everySessionWorks(b)).size).toBe(2);
    await b.release(idle); // lost leases still release cleanly
    await b.release(busy);
    await b.waitAllAvailable(LONG_MS);
    await b.close();
    tb = null;
    expect(await labelledContainers(d.docker, DEPLOYMENT)).toHaveLength(0);
    expect(hostPidsOfContainers(now)).toEqual([]);
  }

  it('dockerd stopped gracefully (SIGTERM) and started again while leases are held and a command runs', async () => {
    await restartUnderLeases('SIGTERM');
  });

  it('dockerd SIGKILLed (its containers outlive it) and started again while leases are held and a command runs', async () => {
    await restartUnderLeases('SIGKILL');
  });

  it('a stuck dockerd (SIGSTOPped): starts fail at their deadline, leases go on, a dead container is still seen; then the pool heals', async () => {
    const d = daemon!;
    const b = await d.withDockerHost(() => startTestBroker({ ...ENV, BROKER_CONTAINERS: '2', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_CONTAINER_START_TIMEOUT: '2' }));
    tb = b;
    await b.waitAllAvailable(LONG_MS);
    const [first, second] = [await b.acquire(), await b.acquire()];
    const hosts = [(await b.exec(first, 'echo $HOSTNAME')).stdout.trim(), (await b.exec(second, 'echo $HOSTNAME')).stdout.trim()];
    const doomedId = poolContainerIds(b).find((cid) => cid.startsWith(hosts[1]))!;
    expect(doomedId).toBeDefined();
    const doomedInit = (await d.docker.getContainer(doomedId).inspect()).State.Pid; // docker-init, in the host's pid namespace
    // Stopped, dockerd answers nothing, as when it deadlocks (docs/known-limits.md).
    process.kill(d.pid!, 'SIGSTOP');
    try {
      const start = b.backend.containers.start({ kind: 'pool', index: 7 });
      await expect(within(start, LONG_MS, 'a container start on a stuck engine')).rejects.toThrow(/did not create and start it within 2 s \(is dockerd stuck\?\)/);
      // Sessions talk to their container over pipes, not through the engine: a lease goes on.
      expect((await within(b.exec(first, 'echo alive'), LONG_MS, 'an execute while the engine is stuck')).stdout).toBe('alive\n');
      // A container that dies meanwhile is still seen: the health checks do not wait on the engine
      // for good, they judge by the container's control lane (its pipes hit EOF).
      process.kill(doomedInit, 'SIGKILL');
      await eventually(async () => (await b.health()).unhealthy_containers === 1, LONG_MS, '/health to count the dead container');
      expect((await b.health()).healthy_containers).toBe(1);
      const lost = await within(b.post(`/session/${second}/execute`, { command: 'echo $HOSTNAME' }), LONG_MS, 'an execute on the dead container');
      expect(lost.status).toBe(410);
      expect((await b.exec(first, 'echo still')).stdout).toBe('still\n');
    } finally {
      process.kill(d.pid!, 'SIGCONT');
    }
    await b.release(first);
    await b.release(second);
    // The engine answers again: the dead container is replaced, and whatever the engine made of the
    // abandoned create is removed (by name, with the removal retries): only the pool's containers stay.
    await b.waitAllAvailable(LONG_MS);
    let leftover = '';
    await eventually(
      async () => {
        const all = await labelledContainers(d.docker, DEPLOYMENT);
        leftover = all.map((c) => `${c.Id.slice(0, 12)} ${c.Names[0]} ${c.State}`).join(', ');
        const ids = all.map((c) => c.Id).sort();
        const pool = poolContainerIds(b).sort();
        return !pool.includes(doomedId) && ids.length === pool.length && ids.every((x, i) => x === pool[i]);
      },
      LONG_MS,
      () => `only the pool containers left on the engine (pool ${poolContainerIds(b).map((x) => x.slice(0, 12)).join(', ')}; engine: ${leftover})`,
    );
    expect((await b.health()).status).toBe('healthy');
    await b.close();
    tb = null;
    expect(await labelledContainers(d.docker, DEPLOYMENT)).toHaveLength(0);
  });
});
