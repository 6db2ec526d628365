/**
 * Signals to a container's processes sent from the host, when the broker runs on the engine's host.
 * A ^C through the container's signal lane needs that lane's bash to get CPU inside the container,
 * and a container whose sessions run busy loops starves it: seconds late under load (the soak's
 * timeouts answered 410). From the host, `kill(2)` on the process group costs no container CPU.
 *
 * A pid inside the container is mapped to the host's through the container's cgroup (its
 * `cgroup.procs`, a few entries) and each candidate's `NSpid` line, read lazily at the first signal
 * and checked again before every one (a pid may be reused).
 */
import fs from 'node:fs';

export class HostPids {
  private procsFile: string | null = null;
  private readonly cache = new Map<number, number>();

  private constructor(
    private readonly initHostPid: number,
    /** The container's pid namespace (`readlink /proc/<init>/ns/pid`): every target must be in it. */
    private readonly pidNamespace: string,
  ) {}

  /**
   * For the container whose init the engine reports as `initHostPid` (State.Pid), or null when this
   * process does not see it: the broker is not on the engine's host, or runs in another pid
   * namespace (where that pid is some other process). `marker` must be in the init's command line.
   */
  static async forContainer(initHostPid: number, marker: string): Promise<HostPids | null> {
    if (!(initHostPid > 1)) return null;
    try {
      const [cmdline, ns, own] = await Promise.all([
        fs.promises.readFile(`/proc/${initHostPid}/cmdline`, 'latin1'),
        fs.promises.readlink(`/proc/${initHostPid}/ns/pid`),
        fs.promises.readlink('/proc/self/ns/pid'),
      ]);
      return cmdline.includes(marker) && ns !== own ? new HostPids(initHostPid, ns) : null;
    } catch {
      return null;
    }
  }

  /** SIGINT/SIGKILL to the group led by `innerPid`. False when it cannot be done from here. */
  async signalGroup(innerPid: number, signal: 'SIGINT' | 'SIGKILL'): Promise<boolean> {
    const host = await this.hostPidOf(innerPid);
    if (host === null) return false;
    try {
      process.kill(-host, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** The host pid of the container's `innerPid` if it leads its own process group; else null. */
  async hostPidOf(innerPid: number): Promise<number | null> {
    if (!(innerPid > 1)) return null;
    const cached = this.cache.get(innerPid);
    if (cached !== undefined && (await this.isLeader(cached, innerPid))) return cached;
    this.cache.delete(innerPid);
    for (const pid of await this.containerPids()) {
      if (await this.isLeader(pid, innerPid)) {
        this.cache.set(innerPid, pid);
        return pid;
      }
    }
    return null;
  }

  /** `hostPid` is the container's `innerPid` and leads its process group. */
  private async isLeader(hostPid: number, innerPid: number): Promise<boolean> {
    try {
      const [status, stat, pidNs] = await Promise.all([
        fs.promises.readFile(`/proc/${hostPid}/status`, 'latin1'),
        fs.promises.readFile(`/proc/${hostPid}/stat`, 'latin1'),
        fs.promises.readlink(`/proc/${hostPid}/ns/pid`),
      ]);
      const ns = /^NSpid:\s+([\d\s]+)$/m.exec(status)?.[1].trim().split(/\s+/);
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      return pidNs === this.pidNamespace && ns !== undefined && ns.length > 1 && Number(ns[ns.length - 1]) === innerPid && pgrp === hostPid;
    } catch {
      return false;
    }
  }

  /**
   * Some process of the container is runnable (state R: running or waiting for a CPU). A container
   * that misses a ping or a shell that is slow to come back after a ^C while this holds is starved of
   * CPU (its own busy loops, or a host with more work than cores), not stuck.
   */
  async busy(): Promise<boolean> {
    const states = await Promise.all(
      (await this.containerPids()).map((pid) =>
        fs.promises.readFile(`/proc/${pid}/stat`, 'latin1').then(
          (stat) => stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3),
          () => '',
        ),
      ),
    );
    return states.includes('R');
  }

  private async containerPids(): Promise<number[]> {
    this.procsFile ??= await this.findProcsFile();
    if (!this.procsFile) return [];
    try {
      const text = await fs.promises.readFile(this.procsFile, 'latin1');
      return text.split('\n').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  }

  /** The container's cgroup.procs: cgroup v2, or v1's pids (or any) hierarchy. */
  private async findProcsFile(): Promise<string | null> {
    let lines: string[];
    try {
      lines = (await fs.promises.readFile(`/proc/${this.initHostPid}/cgroup`, 'latin1')).split('\n').filter(Boolean);
    } catch {
      return null; // not on the engine's host, or the container is gone
    }
    const candidates: string[] = [];
    for (const line of lines) {
      const [, controllers, cgPath] = line.split(':', 3).concat(['', '']);
      if (!cgPath) continue;
      if (controllers === '') candidates.push(`/sys/fs/cgroup${cgPath}`, `/sys/fs/cgroup/unified${cgPath}`);
      else for (const c of controllers.split(',')) candidates.push(`/sys/fs/cgroup/${c.replace(/^name=/, '')}${cgPath}`);
    }
    candidates.sort((a, b) => Number(b.includes('/pids/')) - Number(a.includes('/pids/')));
    for (const dir of candidates) {
      try {
        await fs.promises.access(`${dir}/cgroup.procs`, fs.constants.R_OK);
        return `${dir}/cgroup.procs`;
      } catch {
        /* next */
      }
    }
    return null;
  }
}
