/**
 * Real faults against the Docker backend, and the pool healing from each: a container killed,
 * stopped or paused under the broker, a session's bash killed from outside, a fork bomb held inside
 * the pids limit, and a broker that crashed without cleanup. No timing assertions: every wait is on
 * a condition with a generous bound. Every container this file starts carries one deployment label,
 * and afterAll removes whatever still carries it.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { request } from 'undici';
import { eventually, metricValue, startTestBroker, type Health, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { BrokerProcess } from '../../devtools/brokerProcess';
import {
  containerExists,
  everySessionWorks,
  execIn as execInContainer,
  labelledContainers,
  poolContainerIds,
  removeLabelledContainers,
  watchHealth,
} from '../helpers/dockerFaults';
import { LABEL_INSTANCE } from '../../src/backends/docker/dockerBackend';

const LONG = 60_000;
// Per test: a fault, its healing and a full check take well under this, even on a loaded machine.
jest.setTimeout(240_000);
const DEPLOYMENT = testDeployment(`faults-${process.pid}`);
const BASE_ENV: Record<string, string> = {
  BROKER_DEPLOYMENT: DEPLOYMENT,
  BROKER_CONTAINERS: '2',
  BROKER_SESSIONS_PER_CONTAINER: '2',
  BROKER_HEALTH_INTERVAL: '0.5',
  BROKER_CONTAINER_PING_TIMEOUT: '2',
};

const docker = new Dockerode();

/** Containers (running or not) that carry this file's deployment label. */
async function labelled(): Promise<Dockerode.ContainerInfo[]> {
  return labelledContainers(docker, DEPLOYMENT);
}

const exists = (id: string) => containerExists(docker, id);
const execIn = (id: string, cmd: string[]) => execInContainer(docker, id, cmd);

/** The pool's container entry a session runs in (a container's hostname is its short id). */
async function containerOf(tb: TestBroker, sessionId: string) {
  const host = (await tb.exec(sessionId, 'echo $HOSTNAME')).stdout.trim();
  expect(host).toMatch(/^[0-9a-f]{12}$/);
  const entry = tb.broker.pool.containers.find((c) => c.ref?.id.startsWith(host));
  if (!entry) throw new Error(`no pool container has hostname ${host}`);
  return entry;
}

const runningIds = poolContainerIds;

/** A replaced container must be gone, and the pool must run two other, running, labelled ones. */
async function expectReplaced(tb: TestBroker, oldId: string): Promise<void> {
  await eventually(async () => !(await exists(oldId)), LONG, `container ${oldId.slice(0, 12)} removed`);
  const now = runningIds(tb);
  expect(now).not.toContain(oldId);
  const live = await labelled();
  expect(live.map((c) => c.Id).sort()).toEqual([...now].sort());
  expect(live.every((c) => c.State === 'running')).toBe(true);
}

async function removeLabelled(): Promise<void> {
  await removeLabelledContainers(docker, DEPLOYMENT);
}

/**
 * After its container was lost: the lease `id` answers 410 "broken", /health went through degraded or
 * unhealthy meanwhile (`watch`), and the pool healed with a new container in place of `oldId`.
 */
async function expectLeaseBrokenAndReplaced(b: TestBroker, id: string, oldId: string, watch: ReturnType<typeof watchHealth>): Promise<void> {
  const next = await b.post(`/session/${id}/execute`, { command: 'echo hi' });
  expect(next.status).toBe(410);
  expect(next.json.detail).toMatch(/broken/);
  await b.waitAllAvailable(LONG);
  await watch.stop();
  expect([...watch.seen].some((s) => s === 'degraded' || s === 'unhealthy')).toBe(true);
  await expectReplaced(b, oldId);
  expect((await everySessionWorks(b)).size).toBe(2);
}

describeDocker('docker fault injection: the pool heals', () => {
  let tb: TestBroker | null = null;
  let child: BrokerProcess | null = null;

  async function start(extra: Record<string, string> = {}): Promise<TestBroker> {
    tb = await startTestBroker({ ...BASE_ENV, ...extra });
    await tb.waitAllAvailable(LONG);
    return tb;
  }

  afterEach(async () => {
    // Normally the test closed it already; this is for a test that failed half-way.
    await tb?.close().catch(() => undefined);
    tb = null;
    await child?.signal('SIGKILL');
    child = null;
  });

  afterAll(async () => {
    await removeLabelled();
  });

  it('a container killed under a running command: clear error, 410 after, container replaced', async () => {
    const b = await start();
    const id = await b.acquire();
    const entry = await containerOf(b, id);
    const oldId = entry.ref!.id;

    const watch = watchHealth(b);
    const pending = b.post(`/session/${id}/execute`, { command: 'sleep 30; echo finished', timeout: 120 });
    await eventually(async () => (await execIn(oldId, ['ps'])).out.includes('sleep 30'), LONG, 'sleep 30 running in the container');
    await docker.getContainer(oldId).kill();

    const r = await pending;
    expect(r.status === 410 || r.status >= 500).toBe(true);
    expect(typeof r.json?.detail).toBe('string');
    expect(r.text).not.toContain('finished');

    await expectLeaseBrokenAndReplaced(b, id, oldId, watch);
    await b.release(id); // a broken lease still releases cleanly
    await b.close();
  });

  it("a session's bash killed from outside: that lease gets 410, the container stays", async () => {
    const b = await start();
    const before = runningIds(b);
    const id = await b.acquire();
    const entry = await containerOf(b, id);
    // bash's pid in the container (with per-lease isolation $$ is its pid in its own namespace).
    const pid = (await b.exec(id, 'echo ${BROKER_SHELL_PID:-$$}')).stdout.trim();
    expect(pid).toMatch(/^\d+$/);

    const killed = await execIn(entry.ref!.id, ['kill', '-9', pid]);
    expect(killed.code).toBe(0);

    const next = await b.post(`/session/${id}/execute`, { command: 'echo hi' });
    expect(next.status).toBe(410);
    expect(next.json.detail).toMatch(/broken/);
    const again = await b.post(`/session/${id}/execute`, { command: 'echo hi' });
    expect(again.status).toBe(410);

    await b.waitAllAvailable(LONG);
    expect(runningIds(b)).toEqual(before); // only the shell died: no container was replaced
    expect((await everySessionWorks(b)).size).toBe(2);
    await b.release(id);
    await b.close();
  });

  it('a container stopped (docker stop -t 0): its lease gets 410, the container is replaced', async () => {
    const b = await start();
    const id = await b.acquire();
    const entry = await containerOf(b, id);
    const oldId = entry.ref!.id;

    const watch = watchHealth(b);
    await docker.getContainer(oldId).stop({ t: 0 });
    const next = await b.post(`/session/${id}/execute`, { command: 'echo hi' });
    expect(next.status === 410 || next.status >= 500).toBe(true);
    expect(typeof next.json?.detail).toBe('string');
    await expectLeaseBrokenAndReplaced(b, id, oldId, watch);
    // The replacement is counted (the "containers replaced repeatedly" alert reads it).
    expect(metricValue(await b.metrics(), 'broker_containers_replaced_total')).toBeGreaterThanOrEqual(1);
    await b.close();
  });

  it('a fork filler held by the pids limit: the execute returns, cleanup kills it, the container keeps serving', async () => {
    const b = await start({ BROKER_CONTAINER_PIDS_LIMIT: '64' });
    const before = runningIds(b);
    const id = await b.acquire();
    const entry = await containerOf(b, id);
    const cid = entry.ref!.id;

    const r = await b.post(`/session/${id}/execute`, {
      command: 'for i in $(seq 200); do sleep 30 & done; echo done',
      timeout: 5,
    });
    // Finished (with fork errors), timed out, or the shell was lost: any of these, as JSON, not a hang.
    expect([200, 410]).toContain(r.status);
    expect(r.json).toBeDefined();
    if (r.status === 200) {
      expect(r.json.stderr + r.json.stdout).toMatch(/fork|Resource temporarily unavailable|timed out|done/);
      // Like a terminal after ^C: the shell and its state survive, the filler's processes do not.
      expect((await b.exec(id, 'echo alive')).stdout).toBe('alive\n');
    } else {
      expect(r.json.detail).toMatch(/broken/);
    }
    await b.release(id);

    await b.waitAllAvailable(LONG);
    expect(runningIds(b)).toEqual(before);
    // The release's cleanup killed every sleep the filler started (init reaps them).
    await eventually(async () => !(await execIn(cid, ['ps'])).out.includes('sleep 30'), LONG, 'no sleep 30 left in the container');
    const hosts = await everySessionWorks(b);
    expect(hosts).toContain(cid.slice(0, 12));
    await b.close();
  });

  it("a command beyond the memory limit: it fails or its lease breaks, its neighbour's state survives", async () => {
    const b = await start({ BROKER_CONTAINER_MEMORY: '64m' });
    const before = runningIds(b);
    const ids = await Promise.all(Array.from({ length: b.total }, () => b.acquire()));
    const byHost = new Map<string, string[]>();
    for (const id of ids) {
      const host = (await b.exec(id, 'echo $HOSTNAME')).stdout.trim();
      byHost.set(host, [...(byHost.get(host) ?? []), id]);
    }
    const [victim, neighbour] = [...byHost.values()][0];
    expect(neighbour).toBeDefined();
    await b.exec(neighbour, 'export KEEP=neighbour; cd /tmp');

    // bash keeps the whole substitution in memory: the OOM killer stops it well before 400 MB.
    const r = await b.post(`/session/${victim}/execute`, {
      command: "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo ${#x}",
      timeout: 120,
    });
    expect([200, 410]).toContain(r.status);
    if (r.status === 200) expect(r.json.stdout).not.toContain('400000000');
    else expect(r.json.detail).toMatch(/broken/);

    expect((await b.exec(neighbour, 'echo $KEEP $PWD')).stdout).toBe('neighbour /tmp\n');
    expect(runningIds(b)).toEqual(before); // one command's OOM is not a container failure
    for (const id of ids) await b.release(id);
    await b.waitAllAvailable(LONG);
    expect((await everySessionWorks(b)).size).toBe(2);
    await b.close();
  });

  it('a container paused: the monitor sees it, a command on it fails instead of hanging, it is replaced', async () => {
    const b = await start();
    const id = await b.acquire();
    const entry = await containerOf(b, id);
    const oldId = entry.ref!.id;

    const watch = watchHealth(b);
    await docker.getContainer(oldId).pause();
    const r = await b.post(`/session/${id}/execute`, { command: 'echo hi', timeout: 120 });
    if (!(r.status === 410 || r.status >= 500)) throw new Error(`paused execute answered ${r.status} ${r.text}`);
    expect(typeof r.json?.detail).toBe('string');
    await expectLeaseBrokenAndReplaced(b, id, oldId, watch);
    await b.close();
  });

  it('a replacement that cannot be created at first (its image tag is gone): the pool keeps retrying and heals', async () => {
    // The broker runs a tag of its own; removing the tag (the image stays under its other name)
    // makes every create fail with "No such image" until the tag comes back.
    const base = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
    const [repo, tag] = [base.split(':')[0], `faults-${process.pid}`];
    await docker.getImage(base).tag({ repo, tag });
    const b = await start({ BROKER_IMAGE: `${repo}:${tag}` });
    const entry = b.broker.pool.containers[0];
    const oldId = entry.ref!.id;
    await docker.getImage(`${repo}:${tag}`).remove({ noprune: true });
    await docker.getContainer(oldId).kill();

    // The replacement's create fails: the entry is left with no container.
    let last: Health | null = null;
    await eventually(
      async () => {
        last = await b.health();
        const failedReplacement = /no such image/i.test(entry.unhealthyReason ?? '');
        return failedReplacement && entry.ref === null && !entry.healthy && !entry.replacing && last.unhealthy_containers === 1;
      },
      LONG,
      () => `a failed replacement (entry: ${entry.unhealthyReason}; /health: ${JSON.stringify(last)})`,
    );
    expect(last!.status).toBe('degraded');

    // The cause goes away: the next monitor pass must start the container again.
    await docker.getImage(base).tag({ repo, tag });
    await b.waitAllAvailable(LONG);
    await expectReplaced(b, oldId);
    expect((await everySessionWorks(b)).size).toBe(2);
    await b.close();
    await docker.getImage(`${repo}:${tag}`).remove({ noprune: true });
  });

  it('a broker SIGKILLed without cleanup: the next broker of the deployment sweeps its containers', async () => {
    await removeLabelled();
    const env = { ...BASE_ENV, BROKER_BACKEND: 'docker', BROKER_IMAGE: process.env.BROKER_IMAGE ?? 'bash-broker-test:latest', HOST: '127.0.0.1', PORT: '0' };
    const proc = (child = await BrokerProcess.start('broker A', env));

    let last = '';
    await eventually(
      async () => {
        if (!proc.alive) throw new Error(`broker A exited (${proc.exitStatus?.code}):\n${proc.output}`);
        try {
          const res = await request(`${proc.url}/health`);
          last = await res.body.text();
          const h = JSON.parse(last) as Health;
          return h.status === 'healthy' && h.available_sessions === 4;
        } catch {
          return false;
        }
      },
      LONG,
      () => `broker A warm (last /health: ${last}; log tail:\n${proc.output.slice(-8000)})`,
    );
    const fromA = await labelled();
    expect(fromA).toHaveLength(2);
    const instanceA = fromA[0].Labels[LABEL_INSTANCE];

    await proc.signal('SIGKILL');
    // Nothing cleaned up after A: its containers are still there, still running.
    const orphans = await labelled();
    expect(orphans.map((c) => c.Id).sort()).toEqual(fromA.map((c) => c.Id).sort());
    expect(orphans.every((c) => c.State === 'running')).toBe(true);

    const b = await start();
    for (const c of fromA) expect(await exists(c.Id)).toBe(false);
    const live = await labelled();
    expect(live).toHaveLength(2);
    expect(live.every((c) => c.Labels[LABEL_INSTANCE] !== instanceA)).toBe(true);
    expect(live.map((c) => c.Id).sort()).toEqual(runningIds(b).sort());
    expect((await everySessionWorks(b)).size).toBe(2);

    await b.close();
    expect(await labelled()).toHaveLength(0);
  });
});
