/**
 * A local session's CPU and memory, for execd's /metrics. There is no container here: what is
 * measured is the session's own processes (its bash and everything it started), against the host's
 * CPUs and memory. With cgroup confinement (cgroup.ts) they are the slot's cgroup v2 group: CPU time
 * from its cpu.stat (whole: exited processes included), memory from memory.current where the memory
 * controller is enabled there, else the members' resident sets. Without it they are the processes
 * that carry the session's tag, and CPU is their live processes' time (one that exits takes its own
 * with it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ContainerRef, ResourceMeter, ResourceSample } from '../../core/ports/backend';
import { hostCpus } from '../cgroupUsage';
import { groupPids } from './cgroup';
import { listProcs } from './procfs';

const TICKS_PER_SECOND = 100;
const PAGE_BYTES = 4096;

function readOr(file: string): string | null {
  try {
    return fs.readFileSync(file, 'latin1');
  } catch {
    return null;
  }
}

/** utime + stime in microseconds, and resident bytes, of one process (zeros once it is gone). */
function processUse(pid: number): { cpuUs: number; rssBytes: number } {
  const stat = readOr(`/proc/${pid}/stat`);
  const statm = readOr(`/proc/${pid}/statm`);
  if (!stat || !statm) return { cpuUs: 0, rssBytes: 0 };
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(f[11]) + Number(f[12]); // fields 14 and 15
  return { cpuUs: (ticks * 1e6) / TICKS_PER_SECOND, rssBytes: Number(statm.split(' ')[1]) * PAGE_BYTES };
}

function environHasPrefix(pid: number, prefix: string): boolean {
  const environ = readOr(`/proc/${pid}/environ`);
  return environ !== null && environ.split('\0').some((e) => e.startsWith(prefix));
}

export class LocalMeter implements ResourceMeter {
  constructor(
    /** The slot's cgroup v2 group, or null without cgroup confinement. */
    private readonly slotGroup: (slotId: string) => string | null,
    /** The tag prefix of a slot's processes (`BROKER_SESSION_TAG=<instance>-<slot>-`). */
    private readonly tagPrefix: (slotId: string) => string,
  ) {}

  async sample(_container: ContainerRef, slotId: string): Promise<ResourceSample> {
    const group = this.slotGroup(slotId);
    const host = { cpuCount: hostCpus(), memoryLimitBytes: os.totalmem() };
    if (group) {
      const pids = groupPids(group);
      const usec = /^usage_usec (\d+)$/m.exec(readOr(path.join(group, 'cpu.stat')) ?? '');
      const current = readOr(path.join(group, 'memory.current'));
      const rss = current !== null ? Number(current) : pids.reduce((sum, pid) => sum + processUse(pid).rssBytes, 0);
      const cpuUs = usec ? Number(usec[1]) : pids.reduce((sum, pid) => sum + processUse(pid).cpuUs, 0);
      return { scope: 'local session processes (its cgroup)', ...host, cpuUsageUs: cpuUs, memoryUsedBytes: rss };
    }
    const prefix = this.tagPrefix(slotId);
    let cpuUs = 0;
    let rss = 0;
    for (const p of listProcs()) {
      if (p.pid === process.pid || !environHasPrefix(p.pid, prefix)) continue;
      const use = processUse(p.pid);
      cpuUs += use.cpuUs;
      rss += use.rssBytes;
    }
    return { scope: 'local session processes (by tag)', ...host, cpuUsageUs: cpuUs, memoryUsedBytes: rss };
  }
}
