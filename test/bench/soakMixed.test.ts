/**
 * The short soak: the soak's whole mix (bench/soak/mixed.ts: pool episodes with abuse, timeouts,
 * floods, disconnects and abandoned leases; OpenSandbox SDK sandboxes; workspaces with a viewer;
 * group sandboxes with actions; tasks with a stub model) for 60 s on one broker, at a load sized in
 * the same run: the mix's capacity measured first (short open-loop steps, stepped down when the
 * machine is slow), then half of it, so a busy CI machine runs it slower rather than failing. Every
 * answer must be exactly as expected, and afterwards: every abandoned lease reclaimed, the pool whole,
 * no process left in a pool container, no registration left (workspaces, sandboxes, group and task
 * containers), no container, mount or fd left once the broker stopped. The arrivals are bounded
 * (a rate for 60 s), every phase's drain is bounded, and everything it starts it stops. Broker memory
 * over a minute says nothing: the full soak (npm run soak) judges it over ten.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { mountsUnder } from '../../devtools/groupClient';
import { CUT_OUTCOME, measureCapacity, type Capacity } from '../../bench/soak/capacity';
import { SoakHttp } from '../../bench/soak/http';
import { containerProcesses, deploymentContainers, kindContainers } from '../../bench/soak/leaks';
import { mixFixtures, type MixFixtures } from '../../bench/soak/mixFixtures';
import { MIX_KINDS } from '../../bench/soak/mixed';
import { openFds } from '../../bench/soak/monitor';
import { ReclaimWatch } from '../../bench/soak/reclaimWatch';
import { mixStep, runPhase, type MixParts } from '../../bench/soak/sized';
import { Tally } from '../../bench/soak/tally';

jest.setTimeout(25 * 60_000);
const LONG = 120_000;
const IMAGE = 'bash-broker-sandbox:latest';
const TASK_IMAGE = process.env.BROKER_TASK_IMAGE ?? 'bash-broker-task:latest';
const DEPLOYMENT = testDeployment(`soak-mixed-${process.pid}`);
const CONTAINERS = 4;
const PER_CONTAINER = 4;
const IDLE_TIMEOUT_S = 12;
const LOAD_S = 60;
/** Half the capacity measured: conservative, the machine may be busier during the load than during the steps. */
const LOAD_SHARE = 0.5;
/**
 * Capacity steps: from 0.5/s up by 1.5x, at most 5 steps (so at most 2.53/s: the load at most 1.27/s,
 * ~80 arrivals), down to 0.05/s if the first one misses. 20 s each: a step sees a task or two end.
 */
const SEARCH = { startHz: 0.5, factor: 1.5, maxSteps: 5, minHz: 0.05 };
const STEP_S = 20;
const DRAIN_S = 120;
/** Open fds of this process may differ by this much (keep-alive sockets to dockerd and the broker). */
const FD_MARGIN = 32;
const docker = new Dockerode();

describeDocker('soak: the whole mix at a load sized in the same run (Docker)', () => {
  let tb: TestBroker | null = null;
  let mix: MixFixtures | null = null;
  let http: SoakHttp | null = null;
  const log = (line: string): void => void process.stderr.write(`[soak-mixed] ${line}\n`);

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('group sandboxes need root on the engine host (loop-mounted disks)');
    mix = await mixFixtures(TASK_IMAGE, IMAGE);
    tb = await startTestBroker({
      ...mix.env,
      BROKER_DEPLOYMENT: DEPLOYMENT,
      BROKER_IMAGE: IMAGE,
      BROKER_CONTAINERS: String(CONTAINERS),
      BROKER_SESSIONS_PER_CONTAINER: String(PER_CONTAINER),
      BROKER_POOLS: JSON.stringify({ warm: { image: IMAGE, containers: 2, sessions_per_container: 1 } }),
      BROKER_MAX_OUTPUT_BYTES: String(1024 * 1024),
      BROKER_SESSION_IDLE_TIMEOUT: String(IDLE_TIMEOUT_S),
      BROKER_ACQUIRE_TIMEOUT: '60',
      BROKER_CONTAINER_PIDS_LIMIT: '256',
      BROKER_CONTAINER_MEMORY: '512m',
      BROKER_SHUTDOWN_GRACE: '10',
    });
    await tb.waitAllAvailable(LONG);
    expect((await tb.post('/group/start', {})).status).toBe(200);
  });

  afterAll(async () => {
    await http?.close().catch(() => undefined);
    await tb?.post('/group/stop', {}).catch(() => undefined);
    await tb?.close();
    for (const c of [...(await deploymentContainers(docker, DEPLOYMENT)), ...(await deploymentContainers(docker, `${DEPLOYMENT}.warm`))]) {
      await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
    }
    await mix?.close();
  });

  it('answers every request of the mix exactly at the sized load, and leaves nothing behind', async () => {
    const fdsBefore = openFds(process.pid);
    http = new SoakHttp(tb!.url, 64);
    const tally = new Tally();
    // Idle timeout + one sweep (idle/4) + slack for a loaded machine.
    const reclaims = new ReclaimWatch(http, tally, IDLE_TIMEOUT_S * 1000 * 1.25 + 8000);
    const m: MixParts = { http, reclaims, facade: { url: tb!.url, http, tally, image: IMAGE }, episode: { maxOutputBytes: 1024 * 1024, forkBurst: true }, log };
    const prober = setInterval(() => void reclaims.probeDue(), 1000);
    let capacity: Capacity;
    let arrivals: number;
    try {
      capacity = await measureCapacity(SEARCH, (rate, i) => mixStep(m, rate, STEP_S, 1000 + i), log);
      const rateHz = LOAD_SHARE * capacity.rateHz;
      log(`capacity ${capacity.rateHz.toFixed(2)}/s; the load at ${rateHz.toFixed(2)}/s for ${LOAD_S} s`);
      arrivals = await runPhase(m, tally, { rateHz, seconds: LOAD_S, drainS: DRAIN_S, seed: 7, everyKindFirst: true });
      await reclaims.probeAll();
    } finally {
      clearInterval(prober);
    }
    const summary = tally.summary();
    log(`${arrivals} arrivals: ${JSON.stringify(summary.outcomes)}`);

    // Every answer exactly as expected, every kind of the mix among them.
    expect(summary.errors).toEqual({});
    for (const kind of MIX_KINDS) expect(summary.outcomes[`arrivals: ${kind}`]).toBeGreaterThan(0);
    expect(summary.outcomes['sdk sandbox episode: as expected']).toBeGreaterThan(0);
    expect(summary.outcomes['workspace episode: as expected']).toBeGreaterThan(0);
    expect(summary.outcomes['group sandbox episode: as expected']).toBeGreaterThan(0);
    expect(summary.outcomes['task episode: as expected']).toBeGreaterThan(0);
    expect(summary.outcomes['episodes ended']).toBe(summary.outcomes['arrivals: pool']);
    expect(summary.outcomes[CUT_OUTCOME]).toBeUndefined();
    expect(reclaims.verified).toBe(reclaims.abandoned);

    // The pool whole, no process left in its containers, nothing of the facades still registered.
    await tb!.waitAllAvailable(LONG);
    // A released lease's directories are removed after its slot is offered again (the fs lane's
    // `rm -rf` runs on its own): a process that ends within the bound is that work, not a leak.
    let inside = await containerProcesses(docker, DEPLOYMENT, PER_CONTAINER);
    await eventually(async () => (inside = await containerProcesses(docker, DEPLOYMENT, PER_CONTAINER)).leaks.length === 0, 30_000, 'no process left in the pool\'s containers').catch(() => undefined);
    expect({ containers: inside.containers, leaks: inside.leaks }).toEqual({ containers: CONTAINERS, leaks: [] });
    expect((await http.get('/workspaces')).body).toEqual([]);
    expect((await http.get('/v1/sandboxes')).body.items).toEqual([]);
    expect(await kindContainers(docker, DEPLOYMENT, 'group')).toEqual([]);
    expect(await kindContainers(docker, DEPLOYMENT, 'task')).toEqual([]);

    // Stopped: no container, no mount; this process's fds back (its clients closed).
    await http.close();
    http = null;
    expect((await tb!.post('/group/stop', {})).status).toBe(200);
    await tb!.close();
    tb = null;
    expect([...(await deploymentContainers(docker, DEPLOYMENT)), ...(await deploymentContainers(docker, `${DEPLOYMENT}.warm`))]).toEqual([]);
    expect(mountsUnder(mix!.groupDir)).toEqual([]);
    await eventually(() => openFds(process.pid) <= fdsBefore + FD_MARGIN, LONG, () => `open fds back to ${fdsBefore} (+${FD_MARGIN}): ${openFds(process.pid)}`);
  });
});
