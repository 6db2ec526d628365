/**
 * Each session's memory and CPU within its container (src/backends/docker/cgroups/sessionUsage.ts):
 * its cgroups on the engine's host carry the limits asked for; a memory hog is OOM-killed alone (its
 * execute says so at once, its lease goes on, its neighbour's process lives on); a CPU burner is
 * held to its quota, read from the kernel's own throttling count (a state, never a timing).
 * @backend docker
 */
import Dockerode from 'dockerode';
import fs from 'node:fs';
import path from 'node:path';
import { startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { removeLabelledContainers } from '../helpers/dockerFaults';

const LONG = 120_000;
jest.setTimeout(300_000);
const docker = new Dockerode();
const MiB = 1024 * 1024;

/** The session's own cgroup directory on this host in a v1 hierarchy, from its /proc/self/cgroup line. */
function hostCgroup(procSelfCgroup: string, controller: string): string {
  const line = procSelfCgroup.split('\n').find((l) => l.split(':')[1]?.split(',').includes(controller));
  if (!line) throw new Error(`no ${controller} line in ${procSelfCgroup}`);
  return path.join('/sys/fs/cgroup', controller, line.split(':')[2]);
}

/** A child bash that holds `mib` MiB in one variable: the OOM killer's largest candidate, never the session's own bash. */
const hog = (mib: number): string => `bash -c 'x=$(head -c ${mib * MiB} /dev/zero | tr "\\\\0" a); echo held \${#x}'`;

describeDocker('docker per-session memory and CPU limits', () => {
  let tb: TestBroker | null = null;
  const deployment = testDeployment(`lim-${process.pid}`);

  afterEach(async () => {
    await tb?.close().catch(() => undefined);
    tb = null;
  });

  afterAll(async () => {
    await removeLabelledContainers(docker, deployment);
  });

  it("each session's cgroups carry its limits: memory, equal CPU shares, a CPU quota that the kernel enforces", async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '1', BROKER_CONTAINER_MEMORY: '256m', BROKER_SESSION_MEMORY: '96m', BROKER_SESSION_CPUS: '0.25' }));
    await b.waitAllAvailable(LONG);
    expect((await b.get('/health')).json.isolation).toMatchObject({ session_limits: { memory_bytes: 96 * MiB, cpus: 0.25, refusal: null } });
    const ids = [await b.acquire(), await b.acquire()];
    const cpuDirs: string[] = [];
    for (const id of ids) {
      const cgroups = (await b.exec(id, 'cat /proc/self/cgroup')).stdout;
      const memory = hostCgroup(cgroups, 'memory');
      const cpu = hostCgroup(cgroups, 'cpu');
      cpuDirs.push(cpu);
      expect(Number(fs.readFileSync(path.join(memory, 'memory.limit_in_bytes'), 'latin1'))).toBe(96 * MiB);
      expect(fs.readFileSync(path.join(cpu, 'cpu.shares'), 'latin1').trim()).toBe('1024');
      expect(Number(fs.readFileSync(path.join(cpu, 'cpu.cfs_quota_us'), 'latin1')) / Number(fs.readFileSync(path.join(cpu, 'cpu.cfs_period_us'), 'latin1'))).toBe(0.25);
    }
    // Two sessions, two cgroups of their own.
    expect(new Set(cpuDirs).size).toBe(2);
    // A burner past its quarter of a CPU: the kernel throttles its cgroup (its count is read, not a clock); the neighbour's is not.
    const throttled = (dir: string): number => Number(/^nr_throttled (\d+)$/m.exec(fs.readFileSync(path.join(dir, 'cpu.stat'), 'latin1'))?.[1]);
    const idleBefore = throttled(cpuDirs[1]);
    await b.exec(ids[0], "timeout 2 bash -c 'while :; do :; done'; true", 30);
    expect(throttled(cpuDirs[0])).toBeGreaterThan(0);
    expect(throttled(cpuDirs[1])).toBe(idleBefore);
    for (const id of ids) await b.release(id);
  });

  it('a memory hog is OOM-killed alone: its execute says so, its lease goes on, its neighbour lives on', async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '1', BROKER_CONTAINER_MEMORY: '1g', BROKER_SESSION_MEMORY: '128m', BROKER_SESSION_DISK_BYTES: '32m' }));
    await b.waitAllAvailable(LONG);
    const [hogger, neighbour] = [await b.acquire(), await b.acquire()];
    // The neighbour's long-running process, and a little memory of its own in use.
    expect((await b.exec(neighbour, 'sleep 600 & echo $! >sleeper; x=$(head -c 8388608 /dev/zero | tr "\\0" b); echo ${#x}')).stdout).toBe('8388608\n');
    const killed = await b.execFull(hogger, hog(200), 120);
    expect(killed).toMatchObject({ status: 'Failed', return_code: 137, oom_killed: true });
    // Its lease goes on: the same bash, its variables kept.
    expect((await b.exec(hogger, 'X=1; echo still $X')).stdout).toBe('still 1\n');
    expect((await b.execFull(hogger, hog(16), 60))).toMatchObject({ stdout: `held ${16 * MiB}\n`, return_code: 0, oom_killed: false });
    expect((await b.exec(neighbour, 'kill -0 $(cat sleeper) && echo alive')).stdout).toBe('alive\n');
    await b.release(hogger);
    await b.release(neighbour);
  });
});
