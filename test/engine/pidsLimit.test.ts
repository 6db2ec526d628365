/**
 * A fork burst that fills a container's pids limit and holds it, while a neighbour in the SAME
 * container works and a new lease is acquired there. At the limit every fork fails (bash retries
 * for ~15 s, then aborts its whole input line): what frees the container must not depend on a fork.
 * The control shell's signal lane (interrupts, kills, pings) runs builtins only; its fs lane (mkdir,
 * rm) checks for room first; a new lease's directory can be uploaded instead (controlShell.ts).
 * No timing assertions: every wait is on a condition with a generous bound.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, metricValue, startTestBroker, type HttpResult, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { everySessionWorks, execIn, poolContainerIds, removeLabelledContainers } from '../helpers/dockerFaults';
import { PS, unexpectedProcesses } from '../../devtools/containerPs';

const LONG = 90_000;
jest.setTimeout(300_000);
const DEPLOYMENT = testDeployment(`pidslimit-${process.pid}`);
const PER_CONTAINER = 4;
const docker = new Dockerode();

/** pids.current and pids.max of the session's container, read with builtins (no fork needed). */
const PIDS = 'builtin read -r c < /sys/fs/cgroup/pids/pids.current; builtin read -r m < /sys/fs/cgroup/pids/pids.max; builtin echo "$c $m"';

describeDocker('docker: a fork burst holding the pids limit', () => {
  let tb: TestBroker | null = null;

  afterAll(async () => {
    await tb?.close().catch(() => undefined);
    await removeLabelledContainers(docker, DEPLOYMENT);
  });

  it("neighbours keep their timeouts, acquire never answers 500, and the container recovers once the burst's lease is released", async () => {
    const b = (tb = await startTestBroker({
      BROKER_DEPLOYMENT: DEPLOYMENT,
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: String(PER_CONTAINER),
      BROKER_CONTAINER_PIDS_LIMIT: '64',
      // Sessions share the container's limit (as without cgroup v1, or with two bursts at once):
      // the burst must be able to fill the whole container. sessionPids.test.ts tests the cap.
      BROKER_SESSION_PIDS_LIMIT: '0',
      BROKER_HEALTH_INTERVAL: '0.5',
      // Generous: the pings must keep answering at the limit, but a loaded CI machine is slow.
      BROKER_CONTAINER_PING_TIMEOUT: '10',
      BROKER_ACQUIRE_TIMEOUT: '60',
    }));
    await b.waitAllAvailable(LONG);
    const [containerId] = poolContainerIds(b);

    const burstId = await b.acquire();
    const neighbour = await b.acquire();
    await b.exec(neighbour, 'export MARK=kept; cd /tmp');

    // The burst: far more sleepers than the limit allows, held until its lease is released.
    const burst: Promise<HttpResult> = b.post(`/session/${burstId}/execute`, {
      command: 'for i in $(seq 500); do sleep 3600 & done; echo done',
      timeout: 240,
    });
    let pids = '';
    await eventually(
      async () => {
        pids = (await b.exec(neighbour, PIDS)).stdout;
        const [current, max] = pids.trim().split(' ').map(Number);
        return current >= max - 2;
      },
      LONG,
      () => `the container at its pids limit (last pids.current pids.max: ${pids.trim()})`,
    );

    // A new lease in the full container needs its working directory: a session, or a clear 503.
    const a = await b.post('/session/acquire', {});
    expect([200, 503]).toContain(a.status);
    if (a.status === 200) {
      const id = a.json.session_id as string;
      expect((await b.exec(id, 'builtin pwd')).stdout).toBe(`/tmp/s/${id}\n`);
      // Its cleanup (kills, then `rm -rf`, which cannot fork now) starts before the neighbour's
      // timeout below: the neighbour's ^C and kills must not wait behind it.
      await b.release(id);
    } else {
      expect(a.json.code).toMatch(/session_unavailable|pool_exhausted/);
      expect(a.json.detail).toEqual(expect.any(String));
    }

    // A neighbour's command that cannot fork, timed out: answered as a timeout, its shell and state kept.
    const t = await b.post(`/session/${neighbour}/execute`, { command: 'sleep 30', timeout: 2 });
    expect(t.status).toBe(200);
    expect(t.json.return_code).toBe(-1);
    expect(t.json.stderr).toMatch(/Command timed out after 2\.0 seconds$/);
    expect((await b.exec(neighbour, 'echo "$MARK $PWD"')).stdout).toBe('kept /tmp\n');

    // The burst's lease ends: its sleepers are killed, the container is usable again.
    await b.release(burstId);
    const end = await burst;
    expect([200, 400, 410]).toContain(end.status);
    expect(end.json).toBeDefined();
    await b.release(neighbour);

    await b.waitAllAvailable(LONG);
    expect(poolContainerIds(b)).toEqual([containerId]); // the container answered throughout: not replaced
    let left = '';
    await eventually(
      async () => {
        left = (await execIn(docker, containerId, ['ps', '-eo', 'pid,ppid,sid,stat,lstart,args'])).out;
        return !left.includes('sleep 3600');
      },
      LONG,
      () => `no sleep 3600 left (last ps:\n${left.split('\n').slice(0, 30).join('\n')})`,
    );
    // Only the sessions' shells and the control shell's lanes (the fs lane opened by the first
    // mkdir): no shell leaked by a failed cleanup, nothing else left.
    const ps = (await execIn(docker, containerId, PS)).out;
    expect(unexpectedProcesses(ps, PER_CONTAINER).leaks).toEqual([]);
    // No slot had to be rebuilt: cleanups waited for room instead of failing.
    const metrics = await b.metrics();
    expect(metricValue(metrics, 'broker_cleanups_total', { result: 'failed' })).toBe(0);
    expect(metricValue(metrics, 'broker_sessions_broken_total')).toBe(0);
    expect((await everySessionWorks(b)).size).toBe(1);
    await b.close();
    tb = null;
  });
});
