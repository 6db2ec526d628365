/**
 * One session's pids cgroup (sessionPids.ts makes it), seen from the engine's host: what its bash
 * started, told and killed from Node, with no request into the container.
 */
import fs from 'node:fs';
import path from 'node:path';
import { delay } from '../../../common/delay';

/** Kill passes of a host-side sweep, at most: a fork loop forks between a pass's read and its kills. */
const SWEEP_PASSES = 8;
/** Between two passes: room for a victim's fork in flight to show in cgroup.procs, and for victims to exit. */
const SWEEP_GAP_MS = 1;
/** SIGINT (2) in the last hex digit of /proc/<pid>/status's pending-signal masks. */
const SIGINT_BIT = 0x2;

/** What a host-side sweep of a session's cgroup did. */
export interface Sweep {
  /** Members it SIGKILLed. */
  killed: number;
  /** Live members new to its last pass (a fork loop that outran every pass): 0 when it finished. */
  remaining: number;
}

/**
 * One session's pids cgroup, seen from the engine's host: everything its bash started since
 * `confine`, wherever it went in the container (a double fork, `setsid`, `env -i`: none of that
 * leaves a cgroup), so the broker can tell and kill a lease's processes in Node, with no request
 * into the container and no /proc scan there.
 *
 * What it cannot hold, and why that is no gap:
 * - a process that moved itself out: that takes write access to the cgroup filesystem, and a
 *   container has none (the engine mounts its cgroup hierarchies read-only, and without
 *   CAP_SYS_ADMIN it can neither remount them nor mount its own: checked on this kind of host);
 * - a zombie: once its parent reaped it, it is gone from the cgroup, and until then it is dead
 *   already (state Z is never counted as alive here, though pids.current still counts it).
 *
 * It holds the processes of ONE shell: the cgroup is the slot's, and the pool opens a slot's next
 * shell only once the previous one is closed (a sweep kills every member but `shellHostPid`).
 * No pid is signalled after an await: each pass reads the members and signals them synchronously
 * (a host pid freed meanwhile may be any host process's by then). What a sweep remembers across its
 * passes only spares a victim a second count.
 */
export class SessionCgroup {
  /**
   * pids.current and the shell's /proc/<pid>/stat, kept open: a recycle's check is then two reads,
   * no open, path walk or close (three whole-file reads were ~6% of the broker's CPU in episodes).
   * The stat descriptor is opened at confine, on the process just moved here, and reads fail (ESRCH)
   * once that process is gone, even if its pid was reused since. -1: not open (then by path).
   */
  private countFd = -1;
  private statFd = -1;
  private readonly scratch = Buffer.alloc(1024);

  constructor(
    private readonly dir: string,
    /** The session's bash, as the host sees it (the same process across `exec` recycles). */
    readonly shellHostPid: number,
  ) {
    this.countFd = openQuietly(path.join(dir, 'pids.current'));
    this.statFd = openQuietly(`/proc/${shellHostPid}/stat`);
  }

  /** Tasks charged to the cgroup (pids.current: zombies not yet reaped count too); NaN when unreadable. */
  tasks(): number {
    try {
      return Number((this.countFd >= 0 ? this.readFrom(this.countFd) : fs.readFileSync(path.join(this.dir, 'pids.current'), 'latin1')).trim());
    } catch {
      return NaN;
    }
  }

  /**
   * The shell's state letter, from its own /proc entry; null once it is gone. No membership check:
   * a container cannot move its processes out of their cgroup (see above), and the descriptor
   * cannot name another process. Without the descriptor, as shell() does.
   */
  shellState(): string | null {
    if (this.statFd < 0) {
      try {
        return this.shell()?.state ?? null;
      } catch {
        return null;
      }
    }
    try {
      return parseStat(this.readFrom(this.statFd)).state;
    } catch {
      return null;
    }
  }

  /**
   * A shell that just printed its last answer may still be running (finishing its line, or waiting
   * for a CPU on a busy machine) when its lease is released: waits, at most `maxMs`, for it to fall
   * asleep at its prompt. Its state then (still 'R': a builtin loop, say, which only a ^C ends).
   */
  async settled(maxMs: number): Promise<string | null> {
    const until = Date.now() + maxMs;
    let state = this.shellState();
    while (state === 'R' && Date.now() < until) {
      await delay(1);
      state = this.shellState();
    }
    return state;
  }

  /** The descriptors go; the cgroup itself goes with its container. */
  close(): void {
    for (const fd of [this.countFd, this.statFd]) if (fd >= 0) fs.close(fd, () => undefined);
    this.countFd = this.statFd = -1;
  }

  /** A small kernel-made file read whole from its start, through a kept descriptor. */
  private readFrom(fd: number): string {
    const n = fs.readSync(fd, this.scratch, 0, this.scratch.length, 0);
    return this.scratch.toString('latin1', 0, n);
  }

  /** The shell's state letter and process group on the host; null when it is no member (gone); throws when the cgroup is gone. */
  shell(): { state: string; pgrp: number } | null {
    if (!this.members().includes(this.shellHostPid)) return null;
    return procStat(this.shellHostPid);
  }

  /**
   * A terminal's ^C from the host: SIGINT to the shell's process group when it leads one (the
   * entrypoint's `set -m` makes it), else to the shell alone. Read and sent in one go. False when
   * the shell is no member of the cgroup any more (or the cgroup is gone).
   */
  interruptShell(): boolean {
    let sh: { pgrp: number } | null;
    try {
      sh = this.shell();
    } catch {
      return false;
    }
    return sh !== null && signal(sh.pgrp === this.shellHostPid ? -this.shellHostPid : this.shellHostPid, 'SIGINT');
  }

  /**
   * Waits, at most `maxMs`, until the shell has taken a SIGINT sent to it: an interactive bash that
   * takes one while reading a line discards what it read of it, and the next line (a recycle's
   * exec) must not be written before.
   */
  async interruptTaken(maxMs: number): Promise<void> {
    const until = Date.now() + maxMs;
    while (this.sigintPending() && Date.now() < until) await delay(1);
  }

  private sigintPending(): boolean {
    let status: string;
    try {
      status = fs.readFileSync(`/proc/${this.shellHostPid}/status`, 'latin1');
    } catch {
      return false;
    }
    for (const m of status.matchAll(/^(?:SigPnd|ShdPnd):\s*[0-9a-f]*([0-9a-f])$/gm)) if (parseInt(m[1], 16) & SIGINT_BIT) return true;
    return false;
  }

  /**
   * SIGKILLs every live member (but the shell when `spareShell`), pass after pass: each pass stops,
   * then kills, the members it had not killed yet (stopped, a parent cannot fork into the room its
   * dying children free). Done once a pass finds nobody new and nothing but the shell is charged,
   * or two passes in a row find nobody new (what is left is dying: a process with SIGKILL pending
   * can no longer fork). `remaining` > 0: the passes ran out while new members kept appearing.
   * Throws when the cgroup cannot be read (the container is gone): the caller falls back.
   */
  async sweep(spareShell: boolean): Promise<Sweep> {
    const killed = new Set<number>();
    const keep = spareShell ? 1 : 0;
    let idle = 0;
    let fresh = 0;
    for (let pass = 0; pass < SWEEP_PASSES; pass++) {
      fresh = this.killPass(killed, spareShell);
      idle = fresh === 0 ? idle + 1 : 0;
      if (idle > 0 && (this.tasks() <= keep || idle >= 2)) return { killed: killed.size, remaining: 0 };
      await delay(SWEEP_GAP_MS);
    }
    return { killed: killed.size, remaining: fresh };
  }

  /** One pass, synchronous from the read of the members to the last kill (no pid is kept beyond it). */
  private killPass(killed: Set<number>, spareShell: boolean): number {
    const alive = (p: number): boolean => {
      const state = procStat(p)?.state;
      return state !== undefined && state !== 'Z' && state !== 'X'; // gone, zombie, dead
    };
    const fresh = this.members().filter((p) => !killed.has(p) && p > 1 && p !== process.pid && !(spareShell && p === this.shellHostPid) && alive(p));
    // The spared shell's own children are killed without a stop first: a shell that saw its job
    // stop before the kill landed would report it Stopped (status 147), not killed (137). The rest
    // are stopped first, so a fork loop below cannot outrun the kills.
    const direct = new Set(spareShell ? fresh.filter((p) => procStat(p)?.ppid === this.shellHostPid) : []);
    for (const p of fresh) if (!direct.has(p)) signal(p, 'SIGSTOP');
    for (const p of direct) signal(p, 'SIGKILL');
    for (const p of fresh) {
      if (!direct.has(p)) signal(p, 'SIGKILL');
      killed.add(p);
    }
    return fresh.length;
  }

  /** The cgroup's processes (host pids); throws when the cgroup is gone. */
  private members(): number[] {
    return fs.readFileSync(path.join(this.dir, 'cgroup.procs'), 'latin1').split('\n').filter(Boolean).map(Number);
  }
}

/** State letter, parent and process group of a host process, from /proc; null once it is gone. */
function procStat(pid: number): { state: string; ppid: number; pgrp: number } | null {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  return parseStat(stat);
}

/** The fields after `(comm)` of a /proc/<pid>/stat line (comm may hold spaces and parentheses). */
function parseStat(stat: string): { state: string; ppid: number; pgrp: number } {
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ', 3);
  return { state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]) };
}

function openQuietly(file: string): number {
  try {
    return fs.openSync(file, fs.constants.O_RDONLY);
  } catch {
    return -1;
  }
}

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false; // gone meanwhile
  }
}
