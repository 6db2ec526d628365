/**
 * Per-session pids limits (src/backends/docker/cgroups/sessionPids.ts): a fork burst in one session is held
 * at that session's own limit, so a neighbour in the SAME container still forks at once, with no
 * `fork: retry` and no timeout. Without them (BROKER_SESSION_PIDS_LIMIT=0, test/engine/pidsLimit.test.ts)
 * the burst fills the container and every neighbour's fork waits for bash's retries.
 * Needs cgroup v1 on the engine's host (this machine's, and CI's); elsewhere it fails loudly, saying why.
 * No timing assertions: every wait is on a condition with a generous bound.
 * @backend docker
 */
import Dockerode from 'dockerode';
import fs from 'node:fs';
import path from 'node:path';
import { eventually, startTestBroker, type HttpResult, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { execIn, poolContainerIds, removeLabelledContainers } from '../helpers/dockerFaults';
import { readPidsMount } from '../../src/backends/docker/cgroups/sessionPids';

const LONG = 90_000;
jest.setTimeout(300_000);
const DEPLOYMENT = testDeployment(`sessionpids-${process.pid}`);
const docker = new Dockerode();
const CONTAINER_LIMIT = 64;
const SESSION_LIMIT = 16;

/** The pids cgroup of the shell running it, as /proc/self/cgroup names it (builtins only). */
const OWN_CGROUP = 'while builtin read -r l; do [[ $l == *:pids:* ]] && builtin echo "${l#*:pids:}"; done < /proc/$$/cgroup';

function readNumber(file: string): number {
  const raw = fs.readFileSync(file, 'latin1').trim();
  return raw === 'max' ? Infinity : Number(raw);
}

describeDocker('docker per-session pids limits', () => {
  let tb: TestBroker | null = null;

  afterAll(async () => {
    await tb?.close().catch(() => undefined);
    await removeLabelledContainers(docker, DEPLOYMENT);
  });

  it("a fork burst is held at its session's limit; a neighbour in the same container forks at once", async () => {
    const mount = readPidsMount();
    if (!mount) throw new Error('this host has no cgroup v1 pids hierarchy: per-session pids limits cannot work here (see sessionPids.ts)');
    const b = (tb = await startTestBroker({
      BROKER_DEPLOYMENT: DEPLOYMENT,
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '3',
      BROKER_CONTAINER_PIDS_LIMIT: String(CONTAINER_LIMIT),
      BROKER_SESSION_PIDS_LIMIT: String(SESSION_LIMIT),
      BROKER_ACQUIRE_TIMEOUT: '60',
    }));
    await b.waitAllAvailable(LONG);
    const [containerId] = poolContainerIds(b);
    const containerDir = path.join(mount, 'docker', containerId);

    const burstId = await b.acquire();
    const neighbour = await b.acquire();
    await b.exec(neighbour, 'export MARK=kept; cd /tmp');

    // Each session's bash is in a cgroup of its own under the container's, with the session limit.
    const own = (await b.exec(burstId, OWN_CGROUP)).stdout.trim();
    expect(own).toMatch(new RegExp(`^/docker/${containerId}/bkr-[A-Za-z0-9_.-]+$`));
    expect((await b.exec(neighbour, OWN_CGROUP)).stdout.trim()).not.toBe(own);
    const sessionDir = path.join(mount, own);
    expect(readNumber(path.join(sessionDir, 'pids.max'))).toBe(SESSION_LIMIT);

    // More sleepers than the container allows, held (bash retries its failed forks) until released.
    const burst: Promise<HttpResult> = b.post(`/session/${burstId}/execute`, { command: 'for i in $(seq 100); do sleep 3600 & done; echo done', timeout: 240 });
    await eventually(() => readNumber(path.join(sessionDir, 'pids.current')) >= SESSION_LIMIT, LONG, 'the burst at its session limit');

    // The container keeps room, and the neighbour forks without a single retry.
    expect(readNumber(path.join(containerDir, 'pids.current'))).toBeLessThan(CONTAINER_LIMIT - 8);
    const r = await b.post(`/session/${neighbour}/execute`, { command: 'for i in 1 2 3 4 5 6 7 8; do /bin/true; done; ls / >/dev/null; echo "forked $MARK $PWD"', timeout: 60 });
    expect(r.status).toBe(200);
    expect({ stdout: r.json.stdout, stderr: r.json.stderr, rc: r.json.return_code }).toEqual({ stdout: 'forked kept /tmp\n', stderr: '', rc: 0 });
    // Still held at its own limit: the neighbour's forks did not come from a burst that had ended.
    expect(readNumber(path.join(sessionDir, 'pids.current'))).toBe(SESSION_LIMIT);

    // The burst's lease ends: its sleepers are killed, and the slot's next shell gets the same cgroup.
    await b.release(burstId);
    const end = await burst;
    expect([200, 400, 410]).toContain(end.status);
    await b.release(neighbour);
    await b.waitAllAvailable(LONG);
    let left = '';
    await eventually(
      async () => {
        left = (await execIn(docker, containerId, ['ps', '-eo', 'pid,args'])).out;
        return !left.includes('sleep 3600');
      },
      LONG,
      () => `no sleep 3600 left (last ps:\n${left.split('\n').slice(0, 30).join('\n')})`,
    );
    const slots = fs.readdirSync(containerDir).filter((d) => d.startsWith('bkr-'));
    expect(slots.length).toBe(3);
    for (const s of slots) expect(readNumber(path.join(containerDir, s, 'pids.max'))).toBe(SESSION_LIMIT);
    await b.close();
    tb = null;
  });
});
