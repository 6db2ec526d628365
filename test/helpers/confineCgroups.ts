/**
 * The cgroups that hold the confined broker of the local abuse suite: pids, memory and cpu limits,
 * and a cgroup v2 group that serves as the root of the broker's cgroup namespace (where the local
 * backend's cgroup.kill confinement of sessions runs). Each limit goes where the kernel has its
 * controller: a cgroup v1 hierarchy (the hybrid layout, cgroup2 at /sys/fs/cgroup/unified with no
 * controllers, or pure v1) or cgroup v2 (pure v2 at /sys/fs/cgroup). Each group is created as a child
 * of the group the test process is in, so any limit already placed on us still applies above ours.
 *
 * Memory is bounded with swap included (v1 memory.memsw.limit_in_bytes, v2 memory.swap.max 0): with
 * swap on and only memory.limit_in_bytes set, a hog is swapped out instead of killed. Where the
 * memory limit cannot be made to hold, `memoryGap` says why, and the memory cases skip saying so.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface ConfineLimits {
  /** Tasks (processes and threads, zombies included) in the whole namespace, broker included. */
  pidsMax: number;
  /** Memory of the whole namespace, broker and tmpfs pages included (swap may not extend it). */
  memoryBytes: number;
  /** CPU time per 100 ms period: 100_000 us = one core of the two. */
  cpuQuotaUs: number;
}

type Controller = 'pids' | 'memory' | 'cpu';

/** The kernel (or the group we were started in) lacks what the confinement needs: a reason to skip, not a failure. */
export class ConfinementUnavailableError extends Error {}

export interface ConfineGroups {
  /** Group directories: of each limit (v1 hierarchies or the v2 group), and the v2 one. */
  pids: string;
  /** null when there is no memory controller to use (see memoryGap). */
  memory: string | null;
  cpu: string;
  unified: string;
  /** The cgroup version each limit is set in. */
  versions: Record<Controller, 1 | 2>;
  /** cgroup.procs files a process writes its pid to, to enter every group. */
  procsFiles: string[];
  /** Why the memory limit does not hold here (memory cases skip), or null when it does. */
  memoryGap: string | null;
  /** How swap is kept from extending the memory limit, for the log. */
  swap: string;
  /**
   * The limits as the kernel reads them back (memoryBytes null without a memory group); swapBytes is
   * the swap the memory group may use beyond memoryBytes, null where the kernel does not account swap.
   */
  readLimits(): { pidsMax: number; memoryBytes: number | null; swapBytes: number | null; cpuQuotaUs: number };
  /** Times a fork was refused at pids.max. */
  pidsLimitHits(): number;
  /** Processes the memory limit's OOM killer killed. */
  oomKills(): number;
  /** Whether `pid` (a host pid) is in every group (in the v2 one or a group below it). */
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

function v1Mount(controller: Controller): string | null {
  return mounts().find((x) => x.type === 'cgroup' && x.options.includes(controller))?.dir ?? null;
}

function v2Mount(): string {
  const m = mounts().find((x) => x.type === 'cgroup2');
  if (!m) throw new ConfinementUnavailableError('no cgroup2 is mounted: cannot give the confined broker its cgroup namespace');
  return m.dir;
}

function readList(file: string): string[] {
  try {
    return fs.readFileSync(file, 'latin1').trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
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

function swapTotalBytes(): number {
  const m = /^SwapTotal:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/meminfo', 'latin1'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Removes a group and, first, the groups the broker made inside it (deepest first). */
function removeTree(dir: string): void {
  if (!fs.existsSync(dir)) return;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) removeTree(path.join(dir, entry.name));
  }
  fs.rmdirSync(dir);
}

/**
 * Makes the v2 controllers `wanted` available to the children of our own v2 group. A non-root v2
 * group may hand controllers to its children only while it holds no process itself, so the
 * processes of our group (this test's and its parents') move to a leaf child of it first: still
 * under every limit they were under.
 */
function delegateV2(mount: string, own: string, wanted: Controller[]): void {
  const dir = path.join(mount, own);
  const missing = wanted.filter((c) => !readList(path.join(dir, 'cgroup.subtree_control')).includes(c));
  if (!missing.length) return;
  const offered = readList(path.join(dir, 'cgroup.controllers'));
  const absent = missing.filter((c) => !offered.includes(c));
  if (absent.length) throw new ConfinementUnavailableError(`cgroup v2 group ${own} is not given the ${absent.join(', ')} controller(s) by its parent: cannot confine`);
  if (own !== '/' && readList(path.join(dir, 'cgroup.procs')).length) {
    const leaf = path.join(dir, 'bash-broker-tests');
    fs.mkdirSync(leaf, { recursive: true });
    for (const pid of readList(path.join(dir, 'cgroup.procs'))) {
      try {
        fs.writeFileSync(path.join(leaf, 'cgroup.procs'), pid);
      } catch {
        /* exited meanwhile, or a kernel thread */
      }
    }
  }
  fs.writeFileSync(path.join(dir, 'cgroup.subtree_control'), missing.map((c) => `+${c}`).join(' '));
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
    const unifiedMount = v2Mount();
    const v2Offered = readList(path.join(unifiedMount, 'cgroup.controllers'));
    const versions = {} as Record<Controller, 1 | 2>;
    const missing: Controller[] = [];
    for (const c of ['pids', 'memory', 'cpu'] as const) {
      if (v1Mount(c)) versions[c] = 1;
      else if (v2Offered.includes(c)) versions[c] = 2;
      else missing.push(c);
    }
    for (const c of missing.filter((x) => x !== 'memory')) {
      throw new ConfinementUnavailableError(`the kernel offers no ${c} controller (neither a cgroup v1 hierarchy nor cgroup v2): cannot confine`);
    }
    let memoryGap: string | null = missing.includes('memory') ? 'the kernel offers no memory controller (neither cgroup v1 nor v2)' : null;

    // Read before delegateV2, which may move this process into a leaf below it.
    const ownV2 = ownGroup('');
    const v2Wanted = (['pids', 'memory', 'cpu'] as const).filter((c) => versions[c] === 2);
    if (v2Wanted.length) delegateV2(unifiedMount, ownV2, v2Wanted);
    const make = (mount: string, own: string): string => {
      const dir = path.join(mount, own, name);
      fs.mkdirSync(dir);
      made.push(dir);
      return dir;
    };
    const write = (dir: string, file: string, value: string): void => fs.writeFileSync(path.join(dir, file), value);
    const unified = make(unifiedMount, ownV2);
    const groupFor = (c: Controller): string => (versions[c] === 2 ? unified : make(v1Mount(c)!, ownGroup(c)));

    const pids = groupFor('pids');
    write(pids, 'pids.max', String(limits.pidsMax));
    const cpu = groupFor('cpu');
    if (versions.cpu === 2) write(cpu, 'cpu.max', `${limits.cpuQuotaUs} 100000`);
    else {
      write(cpu, 'cpu.cfs_period_us', '100000');
      write(cpu, 'cpu.cfs_quota_us', String(limits.cpuQuotaUs));
    }

    const hostSwap = swapTotalBytes();
    const noSwap = hostSwap ? '' : ' (no swap on this host)';
    let swap = noSwap ? 'no swap on this host' : '';
    let memory: string | null = null;
    if (!memoryGap) {
      memory = groupFor('memory');
      if (versions.memory === 2) {
        write(memory, 'memory.max', String(limits.memoryBytes));
        if (fs.existsSync(path.join(memory, 'memory.swap.max'))) {
          write(memory, 'memory.swap.max', '0');
          swap = `memory.swap.max 0${noSwap}`;
        } else if (hostSwap) {
          memoryGap = `swap is on (${hostSwap} bytes) and cgroup v2 does not account it (no memory.swap.max): memory.max alone lets a hog swap instead of being killed`;
        }
      } else {
        write(memory, 'memory.limit_in_bytes', String(limits.memoryBytes));
        // A group inherits oom_kill_disable: with it set, a hog would hang at the limit, not die.
        write(memory, 'memory.oom_control', '0');
        if (fs.existsSync(path.join(memory, 'memory.memsw.limit_in_bytes'))) {
          write(memory, 'memory.memsw.limit_in_bytes', String(limits.memoryBytes));
          swap = `memory.memsw.limit_in_bytes, memory and swap together${noSwap}`;
        } else if (hostSwap) {
          // Swap not accounted (swapaccount=0): a v1 group with swappiness 0 never swaps its pages.
          write(memory, 'memory.swappiness', '0');
          swap = 'memory.swappiness 0 (swap is on and not accounted)';
        }
      }
    }

    const dirs = [...new Set([pids, memory, cpu, unified].filter((d): d is string => d !== null))];
    const procsFiles = dirs.map((d) => path.join(d, 'cgroup.procs'));
    // Group paths as /proc/<pid>/cgroup names them (relative to each hierarchy's root).
    const expected = new Map<string, string>([['', path.join(ownV2, name)]]);
    for (const c of ['pids', 'cpu', ...(memory ? ['memory' as const] : [])] as Controller[]) {
      if (versions[c] === 1) expected.set(c, path.join(ownGroup(c), name));
    }
    const holds = (pid: number): boolean => {
      const have = groupsOf(pid);
      return [...expected].every(([h, group]) => (h === '' ? `${have.get(h)}/`.startsWith(`${group}/`) : have.get(h) === group));
    };
    const read = (dir: string, file: string): string => fs.readFileSync(path.join(dir, file), 'latin1');
    const field = (text: string, key: string): number => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    return {
      pids,
      memory,
      cpu,
      unified,
      versions,
      procsFiles,
      memoryGap,
      swap,
      readLimits() {
        const cpuQuotaUs = versions.cpu === 2 ? Number(read(cpu, 'cpu.max').split(' ')[0]) : Number(read(cpu, 'cpu.cfs_quota_us'));
        const memoryBytes = memory ? Number(read(memory, versions.memory === 2 ? 'memory.max' : 'memory.limit_in_bytes')) : null;
        const swapFile = memory && path.join(memory, versions.memory === 2 ? 'memory.swap.max' : 'memory.memsw.limit_in_bytes');
        let swapBytes: number | null = null;
        if (swapFile && fs.existsSync(swapFile)) {
          const v = Number(fs.readFileSync(swapFile, 'latin1'));
          swapBytes = versions.memory === 2 ? v : v - memoryBytes!;
        }
        return { pidsMax: Number(read(pids, 'pids.max')), memoryBytes, swapBytes, cpuQuotaUs };
      },
      pidsLimitHits: () => field(read(pids, 'pids.events'), 'max'),
      oomKills: () => (memory ? field(read(memory, versions.memory === 2 ? 'memory.events' : 'memory.oom_control'), 'oom_kill') : 0),
      holds,
      remove,
    };
  } catch (err) {
    remove();
    throw err;
  }
}

/**
 * Creates the groups once under a throw-away name and removes them: what the suite will get, known
 * before its cases are defined (so a case that cannot check anything here is skipped by name).
 */
export function probeConfineGroups(limits: ConfineLimits): { memoryGap: string | null; swap: string; error: string | null } {
  try {
    const g = createConfineGroups(`bash-broker-probe-${process.pid}`, limits);
    const { memoryGap, swap } = g;
    g.remove();
    return { memoryGap, swap, error: null };
  } catch (err) {
    if (!(err instanceof ConfinementUnavailableError)) throw err;
    return { memoryGap: null, swap: '', error: err.message };
  }
}
