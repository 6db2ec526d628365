/**
 * Helpers shared by the Docker fault tests (faults.test.ts, daemonRestart.test.ts): list a
 * deployment's containers, run a command in a container from outside the broker, watch /health
 * while a fault plays out, and wait for (then prove) a healed pool. Each takes the engine to talk
 * to, so the same checks serve the shared engine and a private dockerd.
 */
import Dockerode from 'dockerode';
import { eventually, type TestBroker } from './broker';
import { LABEL_DEPLOYMENT } from '../../src/backends/docker/dockerBackend';
import { DockerDemuxer } from '../../src/backends/docker/shells/demux';
import { sessionIsolation } from './dockerSuite';

/** Containers (running or not) that carry the deployment label `deployment`. */
export async function labelledContainers(docker: Dockerode, deployment: string): Promise<Dockerode.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${LABEL_DEPLOYMENT}=${deployment}`] } });
}

/** Force-removes every container of the deployment `deployment` (a suite's cleanup; errors ignored). */
export async function removeLabelledContainers(docker: Dockerode, deployment: string): Promise<void> {
  const left = await labelledContainers(docker, deployment);
  await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined)));
}

export async function containerExists(docker: Dockerode, id: string): Promise<boolean> {
  try {
    await docker.getContainer(id).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}

/** `docker exec` of argv in a container, from outside the broker: output and exit code. */
export async function execIn(docker: Dockerode, id: string, cmd: string[]): Promise<{ code: number; out: string }> {
  const exec = await docker.getContainer(id).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, Tty: false });
  const stream = await exec.start({ hijack: true, stdin: false });
  let out = '';
  const demux = new DockerDemuxer((_s, c) => (out += c.toString('utf8')));
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (c: Buffer) => demux.push(c));
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  const info = await exec.inspect();
  return { code: info.ExitCode ?? -1, out };
}

/** Waits until a process whose command line contains `args` (`sleep 300`) runs in a container, seen by `ps` from outside. */
export async function untilRunningIn(docker: Dockerode, id: string, args: string, timeoutMs: number): Promise<void> {
  await eventually(async () => (await execIn(docker, id, ['ps', '-eo', 'args'])).out.includes(args), timeoutMs, `${args} running in container ${id.slice(0, 12)}`);
}

/** The control lanes' bash pids in a container: the processes spawned with an empty session tag (fifoSpawner.ts). */
export async function lanePids(docker: Dockerode, containerId: string): Promise<number[]> {
  const script = 'for p in /proc/[0-9]*; do grep -qxz BROKER_SESSION_TAG= "$p/environ" 2>/dev/null && echo "${p#/proc/}"; done';
  const out = (await execIn(docker, containerId, ['bash', '-c', script])).out;
  return out.split('\n').filter(Boolean).map(Number);
}

/** Records every /health status seen while a fault plays out ('error' when /health did not answer). */
export function watchHealth(tb: TestBroker): { seen: Set<string>; stop: () => Promise<void> } {
  const seen = new Set<string>();
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        seen.add((await tb.health()).status);
      } catch {
        seen.add('error');
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    seen,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}


/** Leases every session, checks each runs a command, and returns the containers (hostnames) they ran in. */
export async function everySessionWorks(tb: TestBroker): Promise<Set<string>> {
  const ids = await Promise.all(Array.from({ length: tb.total }, () => tb.acquire()));
  const hosts = new Set<string>();
  for (const id of ids) {
    const r = await tb.exec(id, 'echo ok; echo $HOSTNAME');
    expect(r.return_code).toBe(0);
    const [ok, host] = r.stdout.trim().split('\n');
    expect(ok).toBe('ok');
    hosts.add(host);
  }
  for (const id of ids) await tb.release(id);
  return hosts;
}

/** The ids of the containers the pool runs now ('' for an entry with none). */
export function poolContainerIds(tb: TestBroker): string[] {
  return tb.broker.pool.containers.map((c) => c.ref?.id ?? '');
}

/** Settles within `ms` or fails naming `what` (a hang is the bug these waits look for). */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_r, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, bound]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether `file` exists in a session's working directory, seen from outside the session: from
 * another lease of its container (`helper`), or with per-lease isolation (where no other lease sees
 * it) from the containers themselves.
 */
export async function existsOutside(tb: TestBroker, helper: string, file: string): Promise<boolean> {
  if (!sessionIsolation) return (await tb.exec(helper, `test -e ${file} && echo yes; true`)).stdout === 'yes\n';
  for (const cid of poolContainerIds(tb)) if ((await execIn(new Dockerode(), cid, ['test', '-e', file])).code === 0) return true;
  return false;
}
