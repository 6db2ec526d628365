/**
 * The cgroups that hold the confined broker of the local abuse suite. On this kind of host cgroup v2
 * (/sys/fs/cgroup/unified) has NO controllers — pids, memory and cpu are all bound to the v1
 * hierarchies — so the limits are set in v1 (pids.max, memory.limit_in_bytes, cpu.cfs_quota_us), and
 * a v2 group (no limits) serves only as the root of the broker's cgroup namespace, where the local
 * backend's cgroup.kill confinement of sessions runs. Each group is created as a child of the group
 * the test process is in, so any limit already placed on us still applies above ours.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface ConfineLimits {
  /** Tasks (processes and threads, zombies included) in the whole namespace, broker included. */
  pidsMax: number;
  /** Memory of the whole namespace, broker and tmpfs pages included. */
  memoryBytes: number;
  /** CPU time per period: 100_000 of 100_000 us = one core of the two. */
  cpuQuotaUs: number;
}

export interface ConfineGroups {
  /** Directories of the groups: v1 pids, memory, cpu, and the v2 one. */
  pids: string;
  memory: string;
  cpu: string;
  unified: string;
  /** cgroup.procs files a process writes its pid to, to enter all four. */
  procsFiles: string[];
  /** Whether `pid` (a host pid) is in all four groups (in the v2 one or a group below it). */
  holds(pid: number): boolean;
  remove(): void;
}

interface Mount {
  dir: string;
  type: string;
  options: string[];
}

function mounts(): Mount[] {
  return fs
    .readFileSync('/proc/self/mounts', 'latin1')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const f = line.split(' ');
      return { dir: f[1], type: f[2], options: f[3].split(',') };
    });
}

function v1Mount(controller: string): string {
  const m = mounts().find((x) => x.type === 'cgroup' && x.options.includes(controller));
  if (!m) throw new Error(`no cgroup v1 hierarchy with the ${controller} controller is mounted: cannot confine`);
  return m.dir;
}

function v2Mount(): string {
  const m = mounts().find((x) => x.type === 'cgroup2');
  if (!m) throw new Error('no cgroup2 is mounted: cannot give the confined broker its cgroup namespace');
  return m.dir;
}

/** Groups of `pid` per hierarchy ("memory" -> "/a/b"; "" for v2), read from the host. */
function groupsOf(pid: number | 'self'): Map<string, string> {
  const found = new Map<string, string>();
  for (const line of fs.readFileSync(`/proc/${pid}/cgroup`, 'latin1').split('\n')) {
    const [, controllers, group] = line.split(':');
    if (group === undefined) continue;
    for (const c of controllers.split(',')) found.set(c, group);
  }
  return found;
}

/** Our own group in a hierarchy ("pids", "memory", "cpu"; "" for v2). */
function ownGroup(hierarchy: string): string {
  const group = groupsOf('self').get(hierarchy);
  if (group === undefined) throw new Error(`no ${hierarchy || 'cgroup v2'} line in /proc/self/cgroup`);
  return group;
}

function makeGroup(mount: string, own: string, name: string, settings: Record<string, string>): string {
  const dir = path.join(mount, own, name);
  fs.mkdirSync(dir);
  for (const [file, value] of Object.entries(settings)) fs.writeFileSync(path.join(dir, file), value);
  return dir;
}

/** Removes a group and, first, the groups the broker made inside it (deepest first). */
function removeTree(dir: string): void {
  if (!fs.existsSync(dir)) return;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) removeTree(path.join(dir, entry.name));
  }
  fs.rmdirSync(dir);
}

export function createConfineGroups(name: string, limits: ConfineLimits): ConfineGroups {
  const made: string[] = [];
  const remove = (): void => {
    const errors: string[] = [];
    for (const dir of made.reverse()) {
      try {
        removeTree(dir);
      } catch (err) {
        errors.push(`${dir}: ${(err as Error).message}`);
      }
    }
    made.length = 0;
    if (errors.length) throw new Error(`could not remove confinement cgroups: ${errors.join('; ')}`);
  };
  try {
    const make = (mount: string, own: string, settings: Record<string, string>): string => {
      const dir = makeGroup(mount, own, name, settings);
      made.push(dir);
      return dir;
    };
    const pids = make(v1Mount('pids'), ownGroup('pids'), { 'pids.max': String(limits.pidsMax) });
    const memory = make(v1Mount('memory'), ownGroup('memory'), { 'memory.limit_in_bytes': String(limits.memoryBytes) });
    const cpu = make(v1Mount('cpu'), ownGroup('cpu'), { 'cpu.cfs_period_us': '100000', 'cpu.cfs_quota_us': String(limits.cpuQuotaUs) });
    const unified = make(v2Mount(), ownGroup(''), {});
    const procsFiles = [pids, memory, cpu, unified].map((d) => path.join(d, 'cgroup.procs'));
    // Group paths as /proc/<pid>/cgroup names them (relative to each hierarchy's root).
    const expected = new Map([
      ['pids', path.join(ownGroup('pids'), name)],
      ['memory', path.join(ownGroup('memory'), name)],
      ['cpu', path.join(ownGroup('cpu'), name)],
      ['', path.join(ownGroup(''), name)],
    ]);
    const holds = (pid: number): boolean => {
      const have = groupsOf(pid);
      return [...expected].every(([h, group]) => (h === '' ? `${have.get(h)}/`.startsWith(`${group}/`) : have.get(h) === group));
    };
    return { pids, memory, cpu, unified, procsFiles, holds, remove };
  } catch (err) {
    remove();
    throw err;
  }
}
