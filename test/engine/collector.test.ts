/**
 * The collector of escapees (ControlShell.collect, procScripts.ts `__bk_gc`): a process that carries
 * the session tag of no live shell is killed at a health ping; the processes of live sessions, and
 * anything started after the collector's list was written, are spared. This is the net under every
 * kill that can miss (a kill that timed out on a starved container, a child forked after a kill
 * pass's snapshot, a bash that died and left its jobs to init).
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { execIn, poolContainerIds } from '../helpers/dockerFaults';
import type { ControlShell } from '../../src/backends/docker/control/controlShell';

jest.setTimeout(180_000);
const docker = new Dockerode();

/** Pids of the processes whose command line is exactly `args`. */
async function pidsOf(containerId: string, args: string): Promise<number[]> {
  const ps = (await execIn(docker, containerId, ['ps', '-eo', 'pid=,args='])).out;
  return ps
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null && m[2].trim() === args)
    .map((m) => Number(m[1]));
}

/** The container's control shell (a test's reach into the backend: the collector has no route). */
function controlOf(tb: TestBroker, containerId: string): ControlShell {
  const links = (tb.backend as unknown as { links: Map<string, { control: ControlShell }> }).links;
  const link = links.get(containerId);
  if (!link) throw new Error(`no link for ${containerId}`);
  return link.control;
}

describeDocker('docker escapee collector', () => {
  let tb: TestBroker | null = null;
  afterEach(async () => {
    await tb?.close();
    tb = null;
  });

  it('kills processes with an ended session tag at a health ping; a live lease keeps its own', async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_HEALTH_INTERVAL: '0.5' });
    const [cid] = poolContainerIds(tb);
    const id = await tb.acquire();
    // Two orphans (reparented to init at once): one with a tag no shell has, as an ended session's
    // escapee carries; one with the lease's own tag, as its own double fork does.
    const r = await tb.exec(id, '(BROKER_SESSION_TAG=an-ended-session.3 exec sleep 3600 &); (exec sleep 3601 &); echo started');
    expect(r.stdout).toBe('started\n');
    // Forked before the answer, but each may still be a subshell about to exec its sleep: wait for both.
    let ownOrphan: number[] = [];
    await eventually(async () => (await pidsOf(cid, 'sleep 3600')).length === 1 && (ownOrphan = await pidsOf(cid, 'sleep 3601')).length === 1, 30_000, 'both sleeps running');

    // Nothing asked for a collection: the periodic one (every 12th ping, 0.5 s apart) takes it.
    await eventually(async () => (await pidsOf(cid, 'sleep 3600')).length === 0, 60_000, 'the stale-tagged sleep collected');
    // The lease's own orphan is its business until the lease ends, and its state is intact.
    expect(await pidsOf(cid, 'sleep 3601')).toEqual(ownOrphan);
    expect((await tb.exec(id, 'echo still')).stdout).toBe('still\n');

    await tb.release(id);
    await eventually(async () => (await pidsOf(cid, 'sleep 3601')).length === 0, 60_000, "the released lease's orphan killed");
    await tb.waitAllAvailable(60_000);
  });

  it('spares a stale-tagged process started after the list was written, and reports what it killed', async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_HEALTH_INTERVAL: '3600' });
    const [cid] = poolContainerIds(tb);
    const control = controlOf(tb, cid);
    const id = await tb.acquire();
    await tb.exec(id, '(BROKER_SESSION_TAG=gone.1 exec sleep 3602 &); echo ok');
    await eventually(async () => (await pidsOf(cid, 'sleep 3602')).length === 1, 30_000, 'sleep 3602 running');
    // The collector spares what started less than one clock tick (10 ms) before its list: wait past it.
    await new Promise((r) => setTimeout(r, 100));
    expect(await control.collect()).toBe(1);
    expect(await pidsOf(cid, 'sleep 3602')).toEqual([]);

    // Simulate a list written before a new escapee started: the same request, an older time stamp.
    await tb.exec(id, '(BROKER_SESSION_TAG=gone.2 exec sleep 3603 &); echo ok');
    await eventually(async () => (await pidsOf(cid, 'sleep 3603')).length === 1, 30_000, 'sleep 3603 running');
    const spared = await (control as unknown as { signal(c: string, t: number): Promise<string> }).signal(`__bk_gc ${Date.now() - 60_000}`, 10_000);
    expect(spared.trim()).toBe('0');
    expect(await pidsOf(cid, 'sleep 3603')).toHaveLength(1);
    // With the list written now, it is taken, and the live session is not.
    expect(await control.collect()).toBe(1);
    expect(await pidsOf(cid, 'sleep 3603')).toEqual([]);
    expect((await tb.exec(id, 'echo alive')).stdout).toBe('alive\n');
    await tb.release(id);
    await tb.waitAllAvailable(60_000);
  });

  it("describes a shell's process tree for the log (__bk_ps), with builtins", async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_HEALTH_INTERVAL: '3600' });
    const [cid] = poolContainerIds(tb);
    const id = await tb.acquire();
    const control = controlOf(tb, cid);
    // bash's pid in the container (with per-lease isolation $$ is its pid in its own namespace).
    const pid = Number((await tb.exec(id, 'sleep 3603 & echo ${BROKER_SHELL_PID:-$$}')).stdout.trim());
    // The background job is forked before the answer, but it may still be a bash about to exec, or a
    // sleep not yet asleep (`R`): wait for the state to be described, not for time to pass.
    let tree = '';
    await eventually(
      async () => {
        tree = await control.describeTree(pid);
        return /\d+\(sleep\) S \S+;( |$)/.test(tree);
      },
      60_000,
      () => `the sleep described asleep (last: ${tree})`,
    );
    expect(tree).toMatch(new RegExp(`(^|; )${pid}\\(bash\\) [RS] \\S+;`));
    expect(await control.describeTree(999999)).toBe('gone');
    await tb.release(id);
  });
});
