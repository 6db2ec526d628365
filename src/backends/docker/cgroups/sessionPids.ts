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
 * from the host (sessionCgroup.ts), without a request into the container.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseMountinfo, readMountinfo, type MountEntry } from './mountinfo';
import { SessionCgroup } from './sessionCgroup';

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

/**
 * The last pid of a `NSpid:` line of /proc/<pid>/status: the pid as the process's own namespace sees
 * it; `nested`, the one before (an isolated session's namespace is nested in its container's).
 */
export function innermostPid(status: string, nested = false): number | null {
  const m = /^NSpid:\s*([\d\s]+)$/m.exec(status);
  if (!m) return null;
  const pids = m[1].trim().split(/\s+/);
  const at = pids.length - (nested ? 2 : 1);
  return at >= 0 ? Number(pids[at]) : null;
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
   * anything; `nested`: an isolated one, in a pid namespace of its own) into the cgroup `name` of
   * this container, made with the session limit on first use.
   * Throws when it cannot: the caller decides whether that is fatal.
   */
  async confine(containerPid: number, name: string, nested = false): Promise<SessionCgroup> {
    const hostPid = this.hostPidOf(containerPid, nested);
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
  private hostPidOf(containerPid: number, nested: boolean): number | null {
    const procs = fs.readFileSync(path.join(this.dir, 'cgroup.procs'), 'latin1').split('\n').filter(Boolean).map(Number);
    procs.sort((a, b) => b - a);
    for (const pid of procs) {
      let status: string;
      try {
        status = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
      } catch {
        continue; // exited meanwhile
      }
      if (innermostPid(status, nested) === containerPid) return pid;
    }
    return null;
  }
}


/** The host's pids mount, read once; null when there is none (or /proc cannot tell). */
export function readPidsMount(): string | null {
  return pidsV1MountOf(readMountinfo());
}
