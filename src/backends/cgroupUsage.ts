/**
 * CPU and memory of one cgroup, read from the host's cgroup filesystems, on every layout the kernel
 * has: cgroup v1 (a hierarchy per controller), cgroup v2 (one hierarchy), and the hybrid of the two
 * (v1 controllers, a cgroup2 at /sys/fs/cgroup/unified that holds none). A process's groups come from
 * /proc/<pid>/cgroup and each hierarchy's mount from /proc/self/mountinfo (the group path is relative
 * to the mount's root), so it works under any cgroup driver (cgroupfs, systemd) and any nesting.
 * A controller is taken from v1 where v1 has it, else from v2.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MountEntry } from './docker/cgroups/mountinfo';

export interface CgroupDirs {
  /** Where CPU time is: v1 cpuacct, or the v2 group (cpu.stat's usage_usec is always there). */
  cpu: { dir: string; version: 1 | 2 } | null;
  /** v1 cpu (the CFS quota) or the v2 group (cpu.max). */
  quota: { dir: string; version: 1 | 2 } | null;
  memory: { dir: string; version: 1 | 2 } | null;
}

export interface CgroupUsage {
  cpuUsageUs: number;
  /** CPUs the quota allows; null without a quota. */
  quotaCpus: number | null;
  /** Without the page cache the kernel can drop (inactive files), as `docker stats` counts it; null without a memory controller. */
  memoryUsedBytes: number | null;
  /** null when unlimited. */
  memoryLimitBytes: number | null;
}

/** The group of each hierarchy a process is in: controller name -> group path ('' is the v2 one). */
export function parseProcCgroup(text: string): Map<string, string> {
  const groups = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const controller of m[1] === '' ? [''] : m[1].split(',')) groups.set(controller, m[2]);
  }
  return groups;
}

function dirIn(mount: MountEntry, group: string): string | null {
  if (mount.root === '/') return path.join(mount.mountPoint, group);
  if (group === mount.root || group.startsWith(`${mount.root}/`)) return path.join(mount.mountPoint, group.slice(mount.root.length));
  return null; // the group is outside what this mount shows (another cgroup namespace)
}

export function cgroupDirs(procCgroup: string, mounts: readonly MountEntry[]): CgroupDirs {
  const groups = parseProcCgroup(procCgroup);
  const v1 = (controller: string): { dir: string; version: 1 } | null => {
    const group = groups.get(controller);
    const mount = mounts.find((m) => m.fstype === 'cgroup' && m.superOptions.includes(controller));
    const dir = group !== undefined && mount ? dirIn(mount, group) : null;
    return dir && fs.existsSync(dir) ? { dir, version: 1 } : null;
  };
  const v2Group = groups.get('');
  const v2Mount = mounts.find((m) => m.fstype === 'cgroup2');
  const v2Dir = v2Group !== undefined && v2Mount ? dirIn(v2Mount, v2Group) : null;
  const v2 = (file: string): { dir: string; version: 2 } | null => (v2Dir && fs.existsSync(path.join(v2Dir, file)) ? { dir: v2Dir, version: 2 } : null);
  return {
    cpu: v1('cpuacct') ?? v2('cpu.stat'),
    quota: v1('cpu') ?? v2('cpu.max'),
    memory: v1('memory') ?? v2('memory.current'),
  };
}

function read(dir: string, file: string): string | null {
  try {
    return fs.readFileSync(path.join(dir, file), 'latin1').trim();
  } catch {
    return null;
  }
}

function statField(text: string | null, name: string): number | null {
  const m = text === null ? null : new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}

/** A v1 memory limit this large means none (the kernel writes PAGE_COUNTER_MAX pages). */
const V1_UNLIMITED_BYTES = 2 ** 60;

function memory(m: NonNullable<CgroupDirs['memory']>): Pick<CgroupUsage, 'memoryUsedBytes' | 'memoryLimitBytes'> {
  const stat = read(m.dir, 'memory.stat');
  if (m.version === 1) {
    const usage = Number(read(m.dir, 'memory.usage_in_bytes'));
    const limit = Number(read(m.dir, 'memory.limit_in_bytes'));
    const inactive = statField(stat, 'total_inactive_file') ?? 0;
    return { memoryUsedBytes: Math.max(0, usage - inactive), memoryLimitBytes: limit > 0 && limit < V1_UNLIMITED_BYTES ? limit : null };
  }
  const usage = Number(read(m.dir, 'memory.current'));
  const max = read(m.dir, 'memory.max');
  const inactive = statField(stat, 'inactive_file') ?? 0;
  return { memoryUsedBytes: Math.max(0, usage - inactive), memoryLimitBytes: max === null || max === 'max' ? null : Number(max) };
}

function quotaCpus(q: CgroupDirs['quota']): number | null {
  if (!q) return null;
  let quota: number;
  let period: number;
  if (q.version === 1) {
    quota = Number(read(q.dir, 'cpu.cfs_quota_us'));
    period = Number(read(q.dir, 'cpu.cfs_period_us'));
  } else {
    const [max, per] = (read(q.dir, 'cpu.max') ?? 'max').split(' ');
    if (max === 'max') return null;
    [quota, period] = [Number(max), Number(per)];
  }
  return quota > 0 && period > 0 ? quota / period : null;
}

/** Reads the groups; throws when the CPU counter cannot be read (the group is gone). */
export function readCgroupUsage(dirs: CgroupDirs): CgroupUsage {
  if (!dirs.cpu) throw new Error('no cgroup with a CPU counter');
  const cpuUsageUs =
    dirs.cpu.version === 1 ? Number(read(dirs.cpu.dir, 'cpuacct.usage')) / 1000 : (statField(read(dirs.cpu.dir, 'cpu.stat'), 'usage_usec') ?? NaN);
  if (!Number.isFinite(cpuUsageUs)) throw new Error(`cannot read the CPU time of ${dirs.cpu.dir}`);
  const mem = dirs.memory ? memory(dirs.memory) : { memoryUsedBytes: null, memoryLimitBytes: null };
  return { cpuUsageUs, quotaCpus: quotaCpus(dirs.quota), ...mem };
}

export function hostCpus(): number {
  return os.availableParallelism();
}
