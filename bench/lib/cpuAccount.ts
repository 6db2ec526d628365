/**
 * Where the CPU went during a run, from /proc: the broker, the client, the sessions' processes (bash
 * and what it runs, locally or inside containers), dockerd and containerd, and the rest of the machine
 * (other users' work, their containers included, and processes that exited during the window).
 * dockerd and containerd serve every user of the engine. In cores: 1.0 = one core busy.
 */
import fs from 'node:fs';

const USER_HZ = 100;

interface ProcTimes {
  comm: string;
  ppid: number;
  /** utime + stime. */
  own: number;
  /** cutime + cstime: children it reaped (a local broker reaps its bash sessions, a shim its runc). */
  reaped: number;
  /** For a containerd shim: the id of the container it runs. */
  containerId?: string;
}

export interface CpuSnapshot {
  atMs: number;
  busyTicks: number;
  procs: Map<number, ProcTimes>;
}

export interface CpuRoles {
  broker?: number;
  client?: number;
  /** The no-op HTTP floors. */
  servers?: number[];
  /** Full ids of this run's containers: processes of other containers (other users') are "rest". */
  containerIds?: Set<string>;
}

export type CpuBreakdown = Record<string, number>;

function readProc(pid: number): ProcTimes | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const close = stat.lastIndexOf(')');
    const f = stat.slice(close + 2).split(' ');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    // Fields 14-17: utime, stime, cutime, cstime.
    const times: ProcTimes = { comm, ppid: Number(f[1]), own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) };
    if (comm.startsWith('containerd-shim')) times.containerId = /\0-id\0([0-9a-f]{64})/.exec(fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1'))?.[1];
    return times;
  } catch {
    return null; // exited between readdir and read
  }
}

/** utime + stime of `pid` (all its threads, not the children it reaped), ms; NaN once it is gone. */
export function ownCpuMs(pid: number): number {
  const p = readProc(pid);
  return p ? (p.own * 1000) / USER_HZ : NaN;
}

/**
 * The whole machine's CPU ticks so far, from the first line of /proc/stat: busy (user, nice, system,
 * irq, softirq, steal) and total (those plus idle and iowait; guest time is already inside user).
 */
export function machineTicks(): { busy: number; total: number } {
  const cpu = fs.readFileSync('/proc/stat', 'latin1').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal = 0] = cpu;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

export function snapshotCpu(): CpuSnapshot {
  const machine = machineTicks();
  const procs = new Map<number, ProcTimes>();
  for (const name of fs.readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const p = readProc(pid);
    if (p) procs.set(pid, p);
  }
  return { atMs: Date.now(), busyTicks: machine.busy, procs };
}

const SESSIONS = 'sessions (bash, commands)';
const DOCKER_PLUMBING = 'containerd, shims, runc';

function category(pid: number, procs: Map<number, ProcTimes>, roles: CpuRoles): string {
  if (pid === roles.broker) return 'broker';
  if (pid === roles.client) return 'client';
  if (roles.servers?.includes(pid)) return 'no-op servers';
  const self = procs.get(pid);
  const ours = (shim: ProcTimes): boolean => shim.containerId !== undefined && (roles.containerIds?.has(shim.containerId) ?? false);
  if (self?.comm === 'dockerd') return 'dockerd';
  if (self?.comm === 'containerd') return DOCKER_PLUMBING;
  if (self?.comm.startsWith('containerd-shim')) return ours(self) ? DOCKER_PLUMBING : 'rest';
  for (let p = self?.ppid ?? 0, hops = 0; p > 1 && hops < 64; p = procs.get(p)?.ppid ?? 0, hops++) {
    if (p === roles.broker || p === roles.client) return SESSIONS;
    const parent = procs.get(p);
    if (parent?.comm.startsWith('containerd-shim')) return ours(parent) ? SESSIONS : 'rest';
  }
  return 'rest';
}

/** Where the time of the children a process reaped belongs. */
function reapedCategory(cat: string): string {
  return cat === 'broker' || cat === 'client' ? SESSIONS : cat;
}

/** CPU used between two snapshots, by category, in cores; `total` is the whole machine's. */
export function cpuBreakdown(a: CpuSnapshot, b: CpuSnapshot, roles: CpuRoles): CpuBreakdown {
  const seconds = Math.max(0.001, (b.atMs - a.atMs) / 1000);
  const ticks: CpuBreakdown = {};
  const add = (cat: string, delta: number): void => {
    if (cat !== 'rest' && delta > 0) ticks[cat] = (ticks[cat] ?? 0) + delta;
  };
  for (const [pid, p] of b.procs) {
    const before = a.procs.get(pid);
    const same = before !== undefined && before.comm === p.comm;
    const cat = category(pid, b.procs, roles);
    add(cat, p.own - (same ? before.own : 0));
    add(reapedCategory(cat), p.reaped - (same ? before.reaped : 0));
  }
  const total = b.busyTicks - a.busyTicks;
  const attributed = Object.values(ticks).reduce((x, y) => x + y, 0);
  const out: CpuBreakdown = { ...ticks, rest: Math.max(0, total - attributed), total };
  for (const k of Object.keys(out)) out[k] = Math.round((out[k] / USER_HZ / seconds) * 100) / 100;
  return out;
}
