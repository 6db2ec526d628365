/**
 * Reading processes from /proc, for the local backend's timeouts and cleanup (Linux only).
 * Start times are in clock ticks since boot; USER_HZ is 100 on every Linux ABI Node runs on.
 */
import fs from 'node:fs';

const TICKS_PER_SECOND = 100;

export interface ProcInfo {
  pid: number;
  /** One letter: R, S, D, Z (zombie: exited, not reaped yet), T... */
  state: string;
  ppid: number;
  /** Its process group. */
  pgrp: number;
  sid: number;
  /** The foreground process group of its controlling terminal (-1: none). */
  tpgid: number;
  startTicks: number;
}

/** Parses /proc/<pid>/stat; the command name may contain spaces and parentheses, so split after the last ')'. */
export function parseStat(pid: number, text: string): ProcInfo | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const f = text.slice(close + 2).split(' ');
  // f[0] is field 3 (state); field n is f[n - 3].
  return { pid, state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), sid: Number(f[3]), tpgid: Number(f[5]), startTicks: Number(f[19]) };
}

export function readProc(pid: number): ProcInfo | null {
  try {
    return parseStat(pid, fs.readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return null; // it exited meanwhile
  }
}

export function listProcs(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const name of fs.readdirSync('/proc')) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const info = readProc(Number(name));
    if (info) out.push(info);
  }
  return out;
}

/** Every process below `root` in the parent tree (not `root` itself). */
export function descendants(procs: readonly ProcInfo[], root: number): ProcInfo[] {
  const children = new Map<number, ProcInfo[]>();
  for (const p of procs) {
    const list = children.get(p.ppid);
    if (list) list.push(p);
    else children.set(p.ppid, [p]);
  }
  const found: ProcInfo[] = [];
  const stack = [root];
  while (stack.length) {
    for (const child of children.get(stack.pop()!) ?? []) {
      found.push(child);
      stack.push(child.pid);
    }
  }
  return found;
}

/** Whether /proc/<pid>/environ holds exactly `entry` (KEY=value). */
export function hasEnvEntry(pid: number, entry: string): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(entry);
  } catch {
    return false;
  }
}

/**
 * Wall-clock time converted to the clock-tick scale of /proc/<pid>/stat's starttime. The boot time is
 * read afresh each call (only timeouts use this): after a VM is suspended or its clock stepped, a
 * cached one would be off by seconds.
 */
export function epochMsToStartTicks(epochMs: number): number {
  const uptimeSeconds = Number(fs.readFileSync('/proc/uptime', 'latin1').split(' ')[0]);
  const bootEpochMs = Date.now() - uptimeSeconds * 1000;
  return Math.floor(((epochMs - bootEpochMs) * TICKS_PER_SECOND) / 1000);
}

export function killQuietly(pid: number, signal: NodeJS.Signals): boolean {
  // pid 0 or negative would signal our own process group: never.
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) return false;
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** `signal` to the process group `pgrp` (never group 0, 1 or the broker's own). */
export function signalGroupQuietly(pgrp: number, signal: NodeJS.Signals): boolean {
  if (!Number.isInteger(pgrp) || pgrp <= 1 || pgrp === readProc(process.pid)?.pgrp) return false;
  try {
    process.kill(-pgrp, signal);
    return true;
  } catch {
    return false;
  }
}
