/**
 * The release's kill decided and done from the engine's host (DockerShell.killForRecycle, with the
 * session's own pids cgroup, sessionPids.ts): a lease that left nothing running costs no request on
 * the container's signal lane; one that left escapees has every one of them killed from the host,
 * still without a signal-lane request (the in-container `__bk_kill` is only a fallback). Health
 * pings are off (one an hour), so the signal lane's request counter sees the release alone.
 * Needs cgroup v1 on the engine's host (this machine's, and CI's). No timing assertions.
 * @backend docker
 */
import Dockerode from 'dockerode';
import fs from 'node:fs';
import path from 'node:path';
import { eventually, startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { execIn, poolContainerIds, removeLabelledContainers } from '../helpers/dockerFaults';
import { readPidsMount } from '../../src/backends/docker/cgroups/sessionPids';
import type { ControlShell } from '../../src/backends/docker/control/controlShell';

jest.setTimeout(180_000);
const LONG = 90_000;
// Named after this run (BROKER_TEST_RUN), so that .ci/run's sweep after a crash takes its containers.
const DEPLOYMENT = testDeployment(`hostkill-${process.pid}`);
const docker = new Dockerode();

/** The pids cgroup of the shell running it, as /proc/self/cgroup names it (builtins only). */
const OWN_CGROUP = 'while builtin read -r l; do [[ $l == *:pids:* ]] && builtin echo "${l#*:pids:}"; done < /proc/$$/cgroup';

function controlOf(tb: TestBroker, containerId: string): ControlShell {
  const link = (tb.backend as unknown as { links: Map<string, { control: ControlShell }> }).links.get(containerId);
  if (!link) throw new Error(`no link for ${containerId}`);
  return link.control;
}

/** The container's processes, `pid args` a line (ps itself excluded). */
async function ps(containerId: string): Promise<string[]> {
  const out = (await execIn(docker, containerId, ['ps', '-eo', 'pid=,stat=,args='])).out;
  return out.split('\n').filter((l) => l.trim() && !/\bps -eo\b/.test(l));
}

/** Lines of `ps` that are a lease's leftovers: a sleep 37xx or the fork loop, not dead (zombie). */
function leftovers(lines: string[]): string[] {
  return lines.filter((l) => /sleep 37\d\d|forkloop/.test(l) && !/^\s*\d+\s+Z/.test(l));
}

describeDocker('docker release kill from the host (session pids cgroup)', () => {
  let tb: TestBroker | null = null;
  let cid = '';
  let sessionDir = '';

  beforeAll(async () => {
    const mount = readPidsMount();
    if (!mount) throw new Error('this host has no cgroup v1 pids hierarchy: the host-side kill cannot work here (see sessionPids.ts)');
    tb = await startTestBroker({
      BROKER_DEPLOYMENT: DEPLOYMENT,
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '1',
      BROKER_CONTAINER_PIDS_LIMIT: '256',
      BROKER_SESSION_PIDS_LIMIT: '64',
      BROKER_HEALTH_INTERVAL: '3600',
      // A shell recycled in place is this suite's subject: an isolated lease's shell never is (its
      // next lease gets a new one, test/isolation/isolation.test.ts).
      BROKER_SESSION_ISOLATION: '0',
    });
    await tb.waitAllAvailable(LONG);
    [cid] = poolContainerIds(tb);
    const id = await tb.acquire();
    const own = (await tb.exec(id, OWN_CGROUP)).stdout.trim();
    await tb.release(id);
    expect(own).toMatch(new RegExp(`^/docker/${cid}/bkr-`));
    sessionDir = path.join(mount, own);
    await tb.waitAllAvailable(LONG);
  });

  afterAll(async () => {
    await tb?.close().catch(() => undefined);
    await removeLabelledContainers(docker, DEPLOYMENT);
  });

  it('a lease that left nothing running: recycled in place with no signal-lane request', async () => {
    const b = tb!;
    const control = controlOf(b, cid);
    const id = await b.acquire();
    const first = await b.exec(id, 'export LEFT=over; cd /tmp; echo $$');
    const lanes = control.signalRequests;
    await b.release(id);
    await b.waitAllAvailable(LONG);
    expect(control.signalRequests - lanes).toBe(0);
    // The same bash process (exec'd in place), fresh: nothing of the lease's state.
    const next = await b.acquire();
    expect((await b.exec(next, 'echo "$$ ${LEFT:-none}"')).stdout).toBe(`${first.stdout.trim()} none\n`);
    await b.release(next);
    await b.waitAllAvailable(LONG);
  });

  it("kills a lease's escapees from the host at release: double fork + setsid, env -i setsid, a job holding stdout, a fork loop", async () => {
    const b = tb!;
    const control = controlOf(b, cid);
    const id = await b.acquire();
    const shellPid = (await b.exec(id, 'echo $$')).stdout.trim();
    const r = await b.exec(
      id,
      [
        "setsid bash -c '(sleep 3701 </dev/null >/dev/null 2>&1 &)' </dev/null >/dev/null 2>&1",
        'env -i setsid sleep 3702 </dev/null >/dev/null 2>&1 &',
        'sleep 3703 &',
        // A fork loop: a sleeper every 10 ms, until it is held at the session's pids limit.
        "setsid bash -c 'exec -a forkloop bash -c \"while :; do sleep 3704 & sleep 0.01; done\"' </dev/null >/dev/null 2>&1 &",
        'sleep 0.5; echo started',
      ].join('\n'),
    );
    expect(r.stdout).toBe('started\n');
    const before = leftovers(await ps(cid));
    for (const what of ['sleep 3701', 'sleep 3702', 'sleep 3703', 'sleep 3704', 'forkloop']) expect(before.join('\n')).toContain(what);

    const lanes = control.signalRequests;
    await b.release(id);
    await b.waitAllAvailable(LONG);
    // Killed at the release, from the host: no signal-lane request (no in-container kill, no
    // collection: health pings, which run the collector, are off).
    expect(control.signalRequests - lanes).toBe(0);
    expect(leftovers(await ps(cid))).toEqual([]);
    const next = await b.acquire();
    // An external command makes the fresh bash wait for a child, and with it reap any zombie the old
    // bash left (a killed job of its own whose SIGCHLD came before the exec): until then pids.current
    // still counts it, though nothing runs.
    expect((await b.exec(next, '/bin/true; echo $$')).stdout).toBe(`${shellPid}\n`);
    // Nothing but the fresh bash is charged to the session's cgroup.
    await eventually(() => Number(fs.readFileSync(path.join(sessionDir, 'pids.current'), 'latin1')) === 1, LONG, 'only bash in the session cgroup');
    await b.release(next);
    await b.waitAllAvailable(LONG);
  });

  it('a bash left in a builtin loop after its command printed its own end marker gets a ^C, and is recycled in place', async () => {
    const b = tb!;
    const id = await b.acquire();
    const shellPid = (await b.exec(id, 'echo $$')).stdout.trim();
    // `__be "$__bn"` is the framing's end marker for the running command: the command ends for the
    // broker while bash goes on looping, alone in its cgroup (nothing to kill, but not at its prompt).
    const r = await b.exec(id, '__be "$__bn" 0; while :; do :; done');
    expect(r.return_code).toBe(0);
    await b.release(id);
    await b.waitAllAvailable(LONG);
    const next = await b.acquire();
    expect((await b.exec(next, 'echo $$')).stdout).toBe(`${shellPid}\n`);
    await b.release(next);
    await b.waitAllAvailable(LONG);
  });
});
