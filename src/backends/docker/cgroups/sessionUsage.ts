/**
 * A session's CPU and memory accounting and limits on the engine's host, for its commands'
 * termination facts: beside its pids cgroup (sessionPids.ts), the session's bash gets a child of its
 * container's cgroup in the cgroup v1 cpuacct, memory and cpu hierarchies, and everything it starts
 * inherits them. The container's limits still cap the sum (v1 memory is hierarchical); the OOM
 * killer's kills are counted in the victim's own cgroup, so a session sees its own.
 *
 * Limits, as the pids limit is set: the memory child's `memory.limit_in_bytes` (a session past it
 * has the OOM killer pick among its own processes only, before its container's limit is reached),
 * and the cpu child's `cpu.shares` (equal for every session: under contention each gets the same
 * share of its container's CPU, whatever it runs) with `cpu.cfs_quota_us` when a session's CPUs are
 * capped.
 *
 * Where it works: cgroup v1 and hybrid hosts (the engine's controllers on v1), with the broker on the
 * engine's host, once the session's host pid is known (its pids cgroup). Under pure cgroup v2 a
 * container's cgroup holds processes, so a child of it can have no memory controller, and the facts
 * say unknown (null) there; so they do for a session whose bash could not be moved.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CgroupUsage, v1UsageFiles } from '../../cgroupCounters';
import { containerCgroupCandidates } from './sessionPids';
import { readMountinfo, type MountEntry } from './mountinfo';

/** The v1 hierarchy of `controller` on this host (a whole one, mounted at its root). */
function v1Mount(mounts: readonly MountEntry[], controller: string): string | null {
  return mounts.find((m) => m.fstype === 'cgroup' && m.superOptions.includes(controller) && m.root === '/')?.mountPoint ?? null;
}

export interface UsageMounts {
  cpuacct: string | null;
  memory: string | null;
  cpu: string | null;
}

export function readUsageMounts(): UsageMounts {
  const mounts = readMountinfo();
  return { cpuacct: v1Mount(mounts, 'cpuacct'), memory: v1Mount(mounts, 'memory'), cpu: v1Mount(mounts, 'cpu') };
}

/** Each session's limits within its container; 0: none of its own. */
export interface SessionLimits {
  memoryBytes: number;
  cpus: number;
}

/** Every session weighs the same (the kernel's default weight): equal shares under contention. */
const SESSION_CPU_SHARES = 1024;
/** The CFS period of a capped session, microseconds (the kernel's default). */
const CFS_PERIOD_US = 100_000;

/** A container's cpuacct and memory cgroups, to give each session a child of its own. */
export class ContainerUsage {
  private constructor(
    private readonly cpuacctDir: string | null,
    private readonly memoryDir: string | null,
    private readonly cpuDir: string | null,
    private readonly limits: SessionLimits,
  ) {}

  /** Null when neither hierarchy has the container's cgroup (cgroup v2, or not on the engine's host). */
  static locate(mounts: UsageMounts, containerId: string, limits: SessionLimits = { memoryBytes: 0, cpus: 0 }): ContainerUsage | null {
    const find = (mount: string | null, file: string): string | null =>
      mount ? (containerCgroupCandidates(mount, containerId).find((dir) => fs.existsSync(path.join(dir, file))) ?? null) : null;
    const cpuacct = find(mounts.cpuacct, 'cpuacct.usage');
    const memory = find(mounts.memory, 'memory.max_usage_in_bytes');
    const cpu = find(mounts.cpu, 'cpu.shares');
    return cpuacct || memory || cpu ? new ContainerUsage(cpuacct, memory, cpu, limits) : null;
  }

  /** Why sessions of this container cannot have the limits asked for; null when they can. */
  limitRefusal(): string | null {
    if (this.limits.memoryBytes > 0 && !this.memoryDir) return "no cgroup v1 memory hierarchy holds the container's cgroup";
    if (!this.cpuDir) return "no cgroup v1 cpu hierarchy holds the container's cgroup";
    return null;
  }

  /**
   * Moves `hostPid` (a session's bash, before it started anything) into the child `name` of each
   * hierarchy, made on first use, and opens its counters. Throws when it cannot.
   */
  async confine(hostPid: number, name: string): Promise<CgroupUsage> {
    const dirs: (string | null)[] = [];
    for (const parent of [this.cpuacctDir, this.memoryDir, this.cpuDir]) {
      if (!parent) {
        dirs.push(null);
        continue;
      }
      const child = path.join(parent, name);
      await fs.promises.mkdir(child).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      // Before the move: nothing the session starts ever runs without them. Written again for a
      // slot's next shell (the child is the slot's): a pool's limits are the same for every lease.
      for (const [file, value] of this.limitsOf(parent)) await fs.promises.writeFile(path.join(child, file), value);
      await fs.promises.writeFile(path.join(child, 'cgroup.procs'), String(hostPid));
      dirs.push(child);
    }
    return new CgroupUsage(v1UsageFiles(dirs[0], dirs[1]));
  }

  private limitsOf(parent: string): [string, string][] {
    if (parent === this.memoryDir) return this.limits.memoryBytes > 0 ? [['memory.limit_in_bytes', String(this.limits.memoryBytes)]] : [];
    if (parent !== this.cpuDir) return [];
    const quota = this.limits.cpus > 0 ? Math.max(1000, Math.round(this.limits.cpus * CFS_PERIOD_US)) : -1;
    return [['cpu.shares', String(SESSION_CPU_SHARES)], ['cpu.cfs_period_us', String(CFS_PERIOD_US)], ['cpu.cfs_quota_us', String(quota)]];
  }
}
