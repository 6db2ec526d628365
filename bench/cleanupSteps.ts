/**
 * `node -r ts-node/register/transpile-only bench/cleanupSteps.ts [--backend local|docker] [--n 30]
 * [--image IMG]`: one episode's pool work taken apart step by step, on the broker's own
 * backend and BashSession in this process (no HTTP, no pool), each step timed alone. With prepared
 * slots the acquire of a slot without files does nothing; what release -> rebuild does is the docker
 * ^C and kill pass on the container's signal lane, the next directory's `mkdir` (docker: on the fs
 * lane, merged with other slots' requests; the old directory's removal is queued, not timed), then
 * the `exec -c` of a fresh bash in the next directory, which runs the framing's init from its rc
 * file (local: the kill, the slot's cgroup or /proc without one, and the exec). Per
 * step: wall time, CPU of this process (the broker's share), CPU of the container (docker: its
 * cpuacct cgroup) or of the session's bash (local), and processes created (/proc/stat, machine-wide:
 * read on a quiet machine). Then the same cleanup for all 8 sessions of one container at once, as
 * the pool's cleanup workers run them: what the container's one lane of each kind serializes.
 * Bounded: n samples, one container of 8 sessions, removed at the end.
 */
import fs from 'node:fs';
import { BashSession } from '../src/core/session/bashSession';
import type { ContainerRef, SessionBackend, ShellProcess } from '../src/core/ports/backend';
import { sessionWorkdir } from '../src/core/ports/backend';
import type { ControlShell } from '../src/backends/docker/control/controlShell';
import type { DockerShell } from '../src/backends/docker/shells/dockerShell';
import { newSessionId } from '../src/common/ids';
import { makeBackend } from './client/raw';
import { processesCreated } from './lib/forks';
import { median, nowMs, summarize } from './lib/stats';
import { EPISODE_FLOOR_DEPLOYMENT } from './protocol';

const PER_CONTAINER = 8;

interface Probe {
  /** CPU of what runs the sessions (container cgroup, or the local bash), in ms. */
  sessionCpuMs(): number;
}

interface StepSample {
  wallMs: number;
  brokerCpuMs: number;
  sessionCpuMs: number;
  forks: number;
}

const samples = new Map<string, StepSample[]>();
/** Signal-lane requests of each killForRecycle run alone (docker). */
const laneRequests: number[] = [];

async function step<T>(name: string, probe: Probe, fn: () => Promise<T>): Promise<T> {
  const f0 = processesCreated();
  const c0 = process.cpuUsage();
  const s0 = probe.sessionCpuMs();
  const t0 = nowMs();
  const out = await fn();
  const wallMs = nowMs() - t0;
  const c = process.cpuUsage(c0);
  const sample = { wallMs, brokerCpuMs: (c.user + c.system) / 1000, sessionCpuMs: probe.sessionCpuMs() - s0, forks: processesCreated() - f0 };
  const list = samples.get(name) ?? [];
  list.push(sample);
  samples.set(name, list);
  return out;
}

function containerProbe(id: string): Probe {
  const file = [`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, `/sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`].find((f) => fs.existsSync(f));
  return {
    sessionCpuMs(): number {
      if (!file) return NaN;
      const text = fs.readFileSync(file, 'latin1');
      if (file.endsWith('cpuacct.usage')) return Number(text.trim()) / 1e6;
      return Number(/usage_usec (\d+)/.exec(text)?.[1] ?? NaN) / 1000;
    },
  };
}

/** The local bash's own CPU and that of the children it reaped, from /proc (10 ms ticks: read as a mean). */
function bashProbe(shell: ShellProcess): Probe {
  const pid = Number(/pid (\d+)/.exec(shell.description)?.[1]);
  return {
    sessionCpuMs(): number {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
      } catch {
        return NaN;
      }
    },
  };
}

type Internals = { links: Map<string, { control: ControlShell }> };
type ShellInternals = { options: { tag: string } };

function fsLaneCommands(backend: SessionBackend, ref: ContainerRef): number {
  const docker = backend as unknown as { fsLaneCommands?(ref: ContainerRef): number };
  return docker.fsLaneCommands?.(ref) ?? 0;
}

/**
 * One episode on a prepared slot, as the pool runs it: the acquire has nothing to do (the slot's
 * rebuild made the directory and started the shell in it), 5 commands, then the rebuild: the old
 * directory's removal queued and the next one's creation (docker: one fs-lane command for both, and
 * for whatever other slots of the container asked meanwhile), the recycle into it (the fresh bash runs
 * the framing's init from its rc file: no init round trip).
 */
async function episodeSteps(kind: 'local' | 'docker', backend: SessionBackend, ref: ContainerRef, session: BashSession, dir: string, probe: Probe, prefix = ''): Promise<[BashSession, string]> {
  for (let i = 1; i <= 5; i++) await session.execute(`echo ${i}`, { timeoutMs: 10_000, maxOutputBytes: 4096 });
  const shell = session.shell;
  if (kind === 'docker') {
    const control = (backend as unknown as Internals).links.get(ref.id)!.control;
    const pid = (shell as DockerShell).containerPid;
    const tag = (shell as unknown as ShellInternals).options.tag;
    await step(`${prefix}cleanup: ^C to the group (signal lane)`, probe, () => control.signalGroup(pid, 'INT'));
    await step(`${prefix}cleanup: __bk_kill pass (signal lane, /proc + environ scan)`, probe, () => control.kill(pid, -1, tag, true));
    // What recycle() runs as its kill now: from the host with the session's pids cgroup (nothing left
    // running: three file reads, no signal-lane request), else the two steps above.
    const lane0 = control.signalRequests;
    await step(`${prefix}cleanup: recycle's kill part (killForRecycle)`, probe, () => (shell as DockerShell).killForRecycle());
    // Alone only: 8 at once, the other sessions' lane steps count on the same lane meanwhile.
    if (!prefix) laneRequests.push(control.signalRequests - lane0);
  }
  const next = sessionWorkdir(newSessionId());
  // The old directory's removal queued, not waited for (docker holds removals to send them
  // together); the next one's creation waited for (the pool takes it from a stock made ahead).
  backend.removeWorkdir(ref, dir).catch((err: Error) => console.error(`removal failed: ${err.message}`));
  await step(`${prefix}cleanup: mkdir next workdir (${kind === 'docker' ? 'fs lane, merged with what is pending' : 'fs.mkdir'})`, probe, () =>
    backend.prepareWorkdir(ref, next, []),
  );
  // Local: the kill inside recycle() reads the slot's cgroup.procs (cgroup v2), or walks /proc without one.
  const what = kind === 'docker' ? '^C + kill + exec + fresh bash in cwd, init in rc' : 'kill + exec + fresh bash in cwd, init in rc';
  const ok = await step(`${prefix}cleanup: recycle(cwd) whole (${what})`, probe, () => shell.recycle!(next));
  if (!ok) throw new Error('recycle failed');
  return [new BashSession(shell), next];
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (name: string, dflt: string): string => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
  };
  const kind = opt('backend', 'local') as 'local' | 'docker';
  const n = Number(opt('n', '30'));
  const image = opt('image', 'bash-broker-sandbox:latest');
  const { backend, root } = await makeBackend(kind, 'default', image, EPISODE_FLOOR_DEPLOYMENT);
  let ref: ContainerRef | null = null;
  const sessions: BashSession[] = [];
  try {
    ref = await backend.containers.start({ kind: 'pool', index: 0 });
    await backend.connectContainer?.(ref);
    const dirs: string[] = [];
    for (let i = 0; i < PER_CONTAINER; i++) {
      const s = new BashSession(await backend.openShell(ref, { slotId: `steps-${i}` }));
      await s.start();
      const dir = sessionWorkdir(newSessionId());
      await backend.prepareWorkdir(ref, dir, []);
      await s.changeDirectory(dir, 10_000);
      sessions.push(s);
      dirs.push(dir);
    }
    const r = ref;
    const probeOf = (s: BashSession): Probe => (kind === 'docker' ? containerProbe(r.id) : bashProbe(s.shell));
    // One session at a time: each step's own cost, nothing queued before it.
    const lane0 = fsLaneCommands(backend, r);
    for (let i = 0; i < n; i++) [sessions[0], dirs[0]] = await episodeSteps(kind, backend, r, sessions[0], dirs[0], probeOf(sessions[0]));
    const lane1 = fsLaneCommands(backend, r);
    // All 8 of the container at once (CPU figures then overlap: read the wall times).
    const together: number[] = [];
    for (let i = 0; i < Math.ceil(n / 4); i++) {
      const t0 = nowMs();
      const fresh = await Promise.all(sessions.map((s, k) => episodeSteps(kind, backend, r, s, dirs[k], probeOf(s), '8 at once | ')));
      together.push(nowMs() - t0);
      fresh.forEach(([s, d], k) => ([sessions[k], dirs[k]] = [s, d]));
    }
    const lane2 = fsLaneCommands(backend, r);
    print(`${kind}${'confinement' in backend ? ` (${String(backend.confinement)})` : ''}`, n, together);
    if (kind === 'docker') {
      const perEpisode = (commands: number, episodes: number): string => (commands / episodes).toFixed(2);
      console.log(`fs-lane commands per episode: ${perEpisode(lane1 - lane0, n)} one at a time, ${perEpisode(lane2 - lane1, together.length * PER_CONTAINER)} with 8 at once`);
    }
  } finally {
    await Promise.all(sessions.map((s) => s.close().catch(() => undefined)));
    if (ref) await backend.removeContainer(ref).catch(() => undefined);
    await backend.close();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  }
}

function print(kind: string, n: number, together: number[]): void {
  const load = fs.readFileSync('/proc/loadavg', 'latin1').split(' ').slice(0, 3).join(' ');
  if (laneRequests.length) console.log(`signal-lane requests per killForRecycle (alone): mean ${(laneRequests.reduce((a, b) => a + b, 0) / laneRequests.length).toFixed(2)}`);
  console.log(`cleanup steps, ${kind} backend, n=${n} sequential samples; load average ${load}`);
  console.log('| step | wall ms p50 / p90 | broker CPU ms (mean) | session/container CPU ms (mean) | processes created (mean) |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  const mean = (v: number[]): number => v.reduce((a, b) => a + b, 0) / Math.max(1, v.length);
  for (const [name, list] of samples) {
    const w = summarize(list.map((s) => s.wallMs));
    console.log(
      `| ${name} | ${w.p50.toFixed(2)} / ${w.p90.toFixed(2)} | ${mean(list.map((s) => s.brokerCpuMs)).toFixed(2)} | ${mean(list.map((s) => s.sessionCpuMs)).toFixed(2)} | ${mean(list.map((s) => s.forks)).toFixed(2)} |`,
    );
  }
  console.log(`8 episodes' pool work in one container at once (5 x echo, cleanup into the next prepared directory): wall p50 ${median(together).toFixed(1)} ms over ${together.length} rounds`);
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.stack);
    process.exit(1);
  },
);
