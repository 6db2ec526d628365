/**
 * A pids limit per session inside a container, so a fork bomb in one session cannot take its
 * neighbours' forks: each session's bash is moved into a child of its container's pids cgroup (on
 * the engine's host) with its own `pids.max`, and everything it starts inherits it. The container's
 * own limit still caps the sum; the control lanes and the entrypoint stay in the container's cgroup,
 * where the room a capped session cannot take remains for them and for the neighbours.
 *
 * Needs what the pipe transport needs (the broker on the engine's host, as root) and cgroup v1's
 * pids hierarchy, where a container's cgroup may have children while it holds processes. Under
 * cgroup v2 the container's cgroup holds processes, so its children cannot have a pids controller
 * of their own ("no internal processes"); there, and wherever the container's cgroup is not found,
 * sessions share the container's limit and the broker says so once at startup.
 *
 * Docker (runc) removes the children with the container's cgroup.
 *
 * The same cgroup holds everything a session started, so its release's kill is decided and done
 * from the host (SessionCgroup), without a request into the container.
 */
import fs from 'node:fs';
import path from 'node:path';
import { delay } from '../../common/delay';
import { parseMountinfo, readMountinfo, type MountEntry } from './mountinfo';

/** The pids controller's cgroup v1 mount point on this host, from /proc/self/mountinfo; null without one. */
export function pidsV1Mount(mountinfo: string): string | null {
  return pidsV1MountOf(parseMountinfo(mountinfo));
}

function pidsV1MountOf(mounts: readonly MountEntry[]): string | null {
  return mounts.find((m) => m.fstype === 'cgroup' && m.superOptions.includes('pids') && m.root === '/')?.mountPoint ?? null;
}

/** Where engines put a container's cgroup: the cgroupfs driver, then the systemd driver. */
export function containerCgroupCandidates(mount: string, containerId: string): string[] {
  return [path.join(mount, 'docker', containerId), path.join(mount, 'system.slice', `docker-${containerId}.scope`)];
}

/** The last pid of a `NSpid:` line of /proc/<pid>/status: the pid as the process's own namespace sees it. */
export function innermostPid(status: string): number | null {
  const m = /^NSpid:\s*([\d\s]+)$/m.exec(status);
  if (!m) return null;
  const pids = m[1].trim().split(/\s+/);
  return Number(pids[pids.length - 1]);
}

/** Per-session pids cgroups of one container. */
export class ContainerPids {
  private constructor(
    private readonly dir: string,
    private readonly sessionMax: number,
  ) {}

  /**
   * The container's pids cgroup when per-session limits can be had here; otherwise the reason why
   * not (said once by the backend).
   */
  static locate(mount: string | null, containerId: string, sessionMax: number): ContainerPids | string {
    if (!mount) return 'no cgroup v1 pids hierarchy on this host (cgroup v2, or a broker in a container without it)';
    for (const dir of containerCgroupCandidates(mount, containerId)) {
      if (fs.existsSync(path.join(dir, 'pids.max'))) return new ContainerPids(dir, sessionMax);
    }
    return `the container's pids cgroup is not at ${containerCgroupCandidates(mount, '<id>').join(' or ')}`;
  }

  /**
   * Moves the process the container sees as `containerPid` (a session's bash, before it started
   * anything) into the cgroup `name` of this container, made with the session limit on first use.
   * Throws when it cannot: the caller decides whether that is fatal.
   */
  async confine(containerPid: number, name: string): Promise<SessionCgroup> {
    const hostPid = this.hostPidOf(containerPid);
    if (hostPid === null) throw new Error(`process ${containerPid} of the container is not in ${this.dir}`);
    const child = path.join(this.dir, name);
    try {
      await fs.promises.mkdir(child);
      await fs.promises.writeFile(path.join(child, 'pids.max'), String(this.sessionMax));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    await fs.promises.writeFile(path.join(child, 'cgroup.procs'), String(hostPid));
    return new SessionCgroup(child, hostPid);
  }

  /**
   * The host pid of a process of this container: the one whose innermost NSpid is `containerPid`.
   * The newest are tried first (a bash just spawned is among the last listed, usually).
   * Synchronous reads: these files are made by the kernel on read (nothing waits on a disk), and
   * through the thread pool each read cost ~20x the syscalls (~0.4 s of a 1024-session warm-up).
   */
  private hostPidOf(containerPid: number): number | null {
    const procs = fs.readFileSync(path.join(this.dir, 'cgroup.procs'), 'latin1').split('\n').filter(Boolean).map(Number);
    procs.sort((a, b) => b - a);
    for (const pid of procs) {
      let status: string;
      try {
        status = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
      } catch {
        continue; // exited meanwhile
      }
      if (innermostPid(status) === containerPid) return pid;
    }
    return null;
  }
}

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
  constructor(
    private readonly dir: string,
    /** The session's bash, as the host sees it (the same process across `exec` recycles). */
    readonly shellHostPid: number,
  ) {}

  /** Tasks charged to the cgroup (pids.current: zombies not yet reaped count too); NaN when unreadable. */
  tasks(): number {
    try {
      return Number(fs.readFileSync(path.join(this.dir, 'pids.current'), 'latin1').trim());
    } catch {
      return NaN;
    }
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
    for (const p of fresh) signal(p, 'SIGSTOP');
    for (const p of fresh) {
      signal(p, 'SIGKILL');
      killed.add(p);
    }
    return fresh.length;
  }

  /** The cgroup's processes (host pids); throws when the cgroup is gone. */
  private members(): number[] {
    return fs.readFileSync(path.join(this.dir, 'cgroup.procs'), 'latin1').split('\n').filter(Boolean).map(Number);
  }
}

/** State letter and process group of a host process, from /proc; null once it is gone. */
function procStat(pid: number): { state: string; pgrp: number } | null {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state: f[0], pgrp: Number(f[2]) };
}

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false; // gone meanwhile
  }
}

/** The host's pids mount, read once; null when there is none (or /proc cannot tell). */
export function readPidsMount(): string | null {
  return pidsV1MountOf(readMountinfo());
}
