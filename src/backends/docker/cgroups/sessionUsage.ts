/**
 * A session's CPU and memory accounting on the engine's host, for its commands' termination facts:
 * beside its pids cgroup (sessionPids.ts), the session's bash gets a child of its container's cgroup
 * in the cgroup v1 cpuacct and memory hierarchies, and everything it starts inherits them. The
 * container's limits still cap the sum (v1 memory is hierarchical); the OOM killer's kills are
 * counted in the victim's own cgroup, so a session sees its own.
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
}

export function readUsageMounts(): UsageMounts {
  const mounts = readMountinfo();
  return { cpuacct: v1Mount(mounts, 'cpuacct'), memory: v1Mount(mounts, 'memory') };
}

/** A container's cpuacct and memory cgroups, to give each session a child of its own. */
export class ContainerUsage {
  private constructor(
    private readonly cpuacctDir: string | null,
    private readonly memoryDir: string | null,
  ) {}

  /** Null when neither hierarchy has the container's cgroup (cgroup v2, or not on the engine's host). */
  static locate(mounts: UsageMounts, containerId: string): ContainerUsage | null {
    const find = (mount: string | null, file: string): string | null =>
      mount ? (containerCgroupCandidates(mount, containerId).find((dir) => fs.existsSync(path.join(dir, file))) ?? null) : null;
    const cpuacct = find(mounts.cpuacct, 'cpuacct.usage');
    const memory = find(mounts.memory, 'memory.max_usage_in_bytes');
    return cpuacct || memory ? new ContainerUsage(cpuacct, memory) : null;
  }

  /**
   * Moves `hostPid` (a session's bash, before it started anything) into the child `name` of each
   * hierarchy, made on first use, and opens its counters. Throws when it cannot.
   */
  async confine(hostPid: number, name: string): Promise<CgroupUsage> {
    const dirs: (string | null)[] = [];
    for (const parent of [this.cpuacctDir, this.memoryDir]) {
      if (!parent) {
        dirs.push(null);
        continue;
      }
      const child = path.join(parent, name);
      await fs.promises.mkdir(child).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      await fs.promises.writeFile(path.join(child, 'cgroup.procs'), String(hostPid));
      dirs.push(child);
    }
    return new CgroupUsage(v1UsageFiles(dirs[0], dirs[1]));
  }
}
