/**
 * CPU used by the sessions' processes, from their cgroups: a docker container's (cgroup v1 cpuacct,
 * or v2 cpu.stat), or a local broker instance's (cgroup v2, bash-broker/<instance>, which holds
 * every slot's group). Exact and per run, where /proc accounting loses what exited: a recycled
 * bash's exec, an `rm` that came and went.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ProcessCpu, SessionCpu } from '../protocol';
import { ownCpuMs } from './cpuAccount';

/** The files that count a container's CPU, first found wins. */
function containerCpuFile(id: string): string | null {
  const candidates = [
    `/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`,
    `/sys/fs/cgroup/cpu,cpuacct/docker/${id}/cpuacct.usage`,
    `/sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`,
    `/sys/fs/cgroup/docker/${id}/cpu.stat`,
  ];
  return candidates.find((f) => fs.existsSync(f)) ?? null;
}

/** A local backend instance's cgroup (localBackend.ts names it after the instance: "<pid>-<rand>"). */
function localInstanceCpuFile(instancePrefix: string): string | null {
  for (const mount of ['/sys/fs/cgroup/unified', '/sys/fs/cgroup']) {
    const base = path.join(mount, 'bash-broker');
    let names: string[];
    try {
      names = fs.readdirSync(base);
    } catch {
      continue;
    }
    const name = names.find((n) => n === instancePrefix || n.startsWith(`${instancePrefix}-`));
    if (name && fs.existsSync(path.join(base, name, 'cpu.stat'))) return path.join(base, name, 'cpu.stat');
  }
  return null;
}

function readCpuMs(file: string): number {
  try {
    const text = fs.readFileSync(file, 'latin1');
    if (file.endsWith('cpuacct.usage')) return Number(text.trim()) / 1e6;
    return Number(/^usage_usec (\d+)$/m.exec(text)?.[1] ?? NaN) / 1000;
  } catch {
    return NaN; // the container is gone
  }
}

export interface SessionCpuMeter {
  /** Where it reads, for the report. */
  readonly where: string;
  /** CPU so far, ms, summed over the groups. */
  read(): number;
}

/** Docker: the containers `ids`; local: the instance whose cgroup is named `<pid>-...` (or exactly `instance`). */
export function sessionCpuMeter(spec: { containerIds: readonly string[] } | { localInstance: string }): SessionCpuMeter | null {
  const files = 'containerIds' in spec ? spec.containerIds.map(containerCpuFile) : [localInstanceCpuFile(spec.localInstance)];
  const found = files.filter((f): f is string => f !== null);
  if (found.length === 0 || found.length < files.length) return null;
  const where = 'containerIds' in spec ? `${found.length} containers' cgroups` : 'the local instance cgroup';
  return { where, read: () => found.reduce((sum, f) => sum + readCpuMs(f), 0) };
}

/** Reads `read()` at `startInMs` and again `durationMs` later: the window's delta, if both were read. */
export function windowDelta(startInMs: number, durationMs: number, read: () => number): { done(): { delta: number; ms: number } | undefined } {
  let a = NaN;
  let b = NaN;
  let aAt = 0;
  let bAt = 0;
  const t1 = setTimeout(() => {
    a = read();
    aAt = performance.now();
  }, startInMs);
  const t2 = setTimeout(() => {
    b = read();
    bAt = performance.now();
  }, startInMs + durationMs);
  return {
    done() {
      clearTimeout(t1);
      clearTimeout(t2);
      return Number.isFinite(a) && Number.isFinite(b) ? { delta: b - a, ms: bAt - aAt } : undefined;
    },
  };
}

/** The meter's window as cores and ms per episode. */
export function sessionCpuOf(meter: SessionCpuMeter | null, w: { done(): { delta: number; ms: number } | undefined } | null, episodes: number): SessionCpu | undefined {
  const d = w?.done();
  if (!meter || !d || episodes <= 0) return undefined;
  return { where: meter.where, cores: d.delta / d.ms, msPerEpisode: d.delta / episodes };
}

/**
 * The broker's (when its pid is known) and this process's own CPU over the same window as the
 * sessions' meter: `done(episodes)` gives them per episode once the window is over.
 */
export function processCpuWindow(startInMs: number, durationMs: number, brokerPid?: number): { done(episodes: number): ProcessCpu | undefined } {
  const client = windowDelta(startInMs, durationMs, () => ownCpuMs(process.pid));
  const broker = brokerPid === undefined ? null : windowDelta(startInMs, durationMs, () => ownCpuMs(brokerPid));
  return {
    done(episodes) {
      const c = client.done();
      const b = broker?.done();
      if (!c || episodes <= 0) return undefined;
      return { clientMsPerEpisode: c.delta / episodes, ...(b ? { brokerMsPerEpisode: b.delta / episodes } : {}) };
    },
  };
}
