/**
 * The two ways a session's bash reaches the broker (src/backends/docker/shells/channel.ts): pipes spawned by
 * the container's entrypoint (the default on a local engine) and one `docker exec` each (the
 * fallback, and BROKER_DOCKER_TRANSPORT=exec). Both must serve the same sessions; the pipes must not
 * give the container anything of the host's but its own read-only directory.
 * @backend docker
 */
import Dockerode from 'dockerode';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker, sessionIsolation } from '../helpers/dockerSuite';
import { SESSION_INIT_NAME } from '../../src/backends/docker/isolation/isolationScript';
import { execIn, lanePids, poolContainerIds } from '../helpers/dockerFaults';
import { PS, SESSION_SHELL, unexpectedProcesses } from '../../devtools/containerPs';

const docker = new Dockerode();

/** Parent pid of every session and lane bash in the container ('0' for a docker exec). */
async function shellParents(containerId: string): Promise<string[]> {
  const ps = (await execIn(docker, containerId, PS)).out;
  return ps
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+\S+\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null && SESSION_SHELL.test(m[3]))
    .map((m) => m[2]);
}

/** A lease's whole life: state kept, a timeout answered, a dead shell a 410, the slot back. */
async function sessionsWork(tb: TestBroker): Promise<void> {
  const id = await tb.acquire();
  await tb.exec(id, 'cd /tmp && export A=1 && B=2');
  expect(await tb.exec(id, 'echo "$PWD $A $B"; echo err >&2')).toEqual({ status: 'Success', stdout: '/tmp 1 2\n', stderr: 'err\n', return_code: 0 });
  const t = await tb.exec(id, 'echo before; sleep 30', 1);
  expect(t.return_code).toBe(-1);
  expect(t.stdout).toBe('before\n');
  expect((await tb.exec(id, 'echo $B')).stdout).toBe('2\n');
  // A bash killed while a background job still holds its stdout: a clear 410 all the same.
  const dead = await tb.post(`/session/${id}/execute`, { command: 'sleep 300 & kill -9 $$' });
  expect(dead.status).toBe(410);
  await tb.release(id);
  await tb.waitAllAvailable(60_000);
  const next = await tb.acquire();
  expect((await tb.exec(next, 'echo "${A-unset} $PWD"')).stdout).toBe(`unset /tmp/s/${next}\n`);
  await tb.release(next);
}

describeDocker('docker transports', () => {
  let tb: TestBroker | null = null;
  afterEach(async () => {
    await tb?.close();
    tb = null;
  });

  it('by default, sessions and lanes are spawned by the entrypoint on pipes in a read-only mount', async () => {
    tb = await startTestBroker();
    const [id] = poolContainerIds(tb);
    const parents = await shellParents(id);
    expect(parents.length).toBeGreaterThanOrEqual(tb.total / 2 + 1); // this container's sessions + the signal lane
    expect(parents).not.toContain('0'); // no docker exec
    const info = await docker.getContainer(id).inspect();
    const mount = info.Mounts.find((m) => m.Destination === '/.bkr');
    expect(mount?.RW).toBe(false);
    // The container cannot create anything there, and the shells' pipes were unlinked once open.
    expect((await execIn(docker, id, ['bash', '-c', 'echo x > /.bkr/x'])).code).not.toBe(0);
    // Beside them, with isolation on, the link to the session init built for this host (sessionInitBuild.ts).
    const entries = (await execIn(docker, id, ['ls', '-A', '/.bkr'])).out.split('\n').filter(Boolean).sort();
    expect(entries.filter((e) => e !== SESSION_INIT_NAME)).toEqual(['events', 'spawn']);
    if (!sessionIsolation) expect(entries).not.toContain(SESSION_INIT_NAME);
    await sessionsWork(tb);
    expect(unexpectedProcesses((await execIn(docker, id, PS)).out, tb.total / 2).leaks).toEqual([]);
    const dir = mount!.Source;
    await tb.close();
    tb = null;
    // Its directory goes with the broker.
    expect((await execIn(docker, id, ['true']).catch(() => ({ code: -1 }))).code).toBe(-1);
    await expect(import('node:fs').then((fs) => fs.promises.stat(dir))).rejects.toThrow(/ENOENT/);
  });

  it("a container opens its fs lane with its slots' first fill (their prepared directories) and keeps it: one signal lane, one fs lane", async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2' });
    const [cid] = poolContainerIds(tb);
    // The signal lane (pings and kills need it at once) and the fs lane that made the first leases' directories.
    expect(await lanePids(docker, cid)).toHaveLength(2);
    const id = await tb.acquire();
    expect((await tb.exec(id, 'pwd; echo ok')).stdout).toBe(`/tmp/s/${id}\nok\n`);
    await tb.release(id);
    // The next lease's directory (and the removal of this one's) reuse the lane.
    const next = await tb.acquire();
    expect((await tb.exec(next, 'echo again')).stdout).toBe('again\n');
    expect(await lanePids(docker, cid)).toHaveLength(2);
  });

  it('BROKER_DOCKER_TRANSPORT=exec: one docker exec per shell, same sessions', async () => {
    tb = await startTestBroker({ BROKER_DOCKER_TRANSPORT: 'exec' });
    const [id] = poolContainerIds(tb);
    const parents = await shellParents(id);
    expect(parents.length).toBeGreaterThanOrEqual(tb.total / 2 + 1);
    expect(new Set(parents)).toEqual(new Set(['0']));
    expect((await docker.getContainer(id).inspect()).Mounts).toEqual([]);
    await sessionsWork(tb);
  });

  it('refuses a pipes directory someone else could control, and removes nothing through it', async () => {
    // /dev/shm's shape: a world-writable parent, where another user could have put a link first.
    const shared = fs.mkdtempSync(path.join(os.tmpdir(), 'fifo-shared-'));
    fs.chmodSync(shared, 0o1777);
    const victim = fs.mkdtempSync(path.join(os.tmpdir(), 'fifo-victim-'));
    const deployment = testDeployment(`test-${process.pid}-link`);
    fs.mkdirSync(path.join(victim, deployment));
    fs.writeFileSync(path.join(victim, deployment, 'keep'), 'x');
    fs.symlinkSync(victim, path.join(shared, 'bash-broker'));
    try {
      tb = await startTestBroker({ BROKER_DOCKER_FIFO_DIR: path.join(shared, 'bash-broker'), BROKER_DEPLOYMENT: deployment });
      const [id] = poolContainerIds(tb);
      expect(new Set(await shellParents(id))).toEqual(new Set(['0']));
      await tb.close();
      tb = null;
      expect(fs.readdirSync(path.join(victim, deployment))).toEqual(['keep']);
    } finally {
      fs.rmSync(shared, { recursive: true, force: true });
      fs.rmSync(victim, { recursive: true, force: true });
    }
  });

  it('auto falls back to docker exec when the pipes cannot be made', async () => {
    tb = await startTestBroker({ BROKER_DOCKER_FIFO_DIR: '/proc/no-such-dir' });
    const [id] = poolContainerIds(tb);
    expect(new Set(await shellParents(id))).toEqual(new Set(['0']));
    await sessionsWork(tb);
  });
});
