/**
 * A local bash process: spawned detached (it leads its own session and process group, so SIGINT
 * to the group is a terminal's ^C), confined in a cgroup when possible, tagged through its
 * environment otherwise, so cleanup can find every process it started.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { ShellListener, ShellProcess } from '../../core/backend';
import { addProcess, groupPids, killGroupAsync } from './cgroup';
import { descendants, epochMsToStartTicks, hasEnvEntry, killQuietly, listProcs, readProc } from './procfs';

export const SHELL_ARGS = ['--norc', '--noprofile', '--noediting', '-i'];
const EXIT_WAIT_MS = 5000;

export interface LocalShellOptions {
  cwd: string;
  env: Record<string, string>;
  /** `KEY=value` placed in the environment, for finding escapees when there is no cgroup. */
  tag: string;
  cgroup: string | null;
}

export class LocalShell implements ShellProcess {
  readonly description: string;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pid: number;
  private listener: ShellListener | null = null;
  private exited = false;
  private readonly exitedPromise: Promise<void>;
  private closePromise: Promise<void> | null = null;

  constructor(private readonly options: LocalShellOptions) {
    const [key, value] = splitTag(options.tag);
    this.child = spawn('bash', SHELL_ARGS, {
      cwd: options.cwd,
      env: { ...options.env, [key]: value },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.pid = this.child.pid ?? -1;
    this.description = `local bash pid ${this.pid}`;
    // Before bash reads a single command, so nothing it starts can be outside the group.
    if (options.cgroup && this.pid > 0) addProcess(options.cgroup, this.pid);
    this.child.stdout.on('data', (c: Buffer) => this.listener?.onData('stdout', c));
    this.child.stderr.on('data', (c: Buffer) => this.listener?.onData('stderr', c));
    this.child.stdin.on('error', () => undefined); // EPIPE after death; 'close' reports it
    this.exitedPromise = new Promise((resolve) => {
      // 'close' comes after both pipes drained, so no output is lost behind the exit.
      this.child.once('close', (code, signal) => {
        this.exited = true;
        const reason = signal ? `bash was killed by ${signal}` : `bash exited with status ${code}`;
        this.listener?.onExit({ code, signal, reason });
        resolve();
      });
      this.child.once('error', (err) => {
        if (this.pid > 0) return;
        this.exited = true;
        this.listener?.onExit({ code: null, signal: null, reason: `bash could not start: ${err.message}` });
        resolve();
      });
    });
  }

  setListener(listener: ShellListener): void {
    this.listener = listener;
  }

  write(text: string): void {
    if (!this.exited) this.child.stdin.write(text);
  }

  interrupt(): void {
    if (!this.exited && this.pid > 1) {
      try {
        process.kill(-this.pid, 'SIGINT');
      } catch {
        /* group already gone */
      }
    }
  }

  async killStartedSince(sinceEpochMs: number): Promise<number> {
    // One tick of slack: start times are rounded to 10 ms.
    const since = epochMsToStartTicks(sinceEpochMs) - 1;
    let killed = 0;
    for (const pid of this.processPids()) {
      if (pid === this.pid) continue;
      const info = readProc(pid);
      if (info && info.startTicks >= since && killQuietly(pid, 'SIGKILL')) killed++;
    }
    return killed;
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    if (this.options.cgroup) {
      await killGroupAsync(this.options.cgroup);
    } else {
      // Collect first, then kill in one pass: a killed parent would otherwise reparent its children.
      for (const pid of this.processPids()) killQuietly(pid, 'SIGKILL');
    }
    killQuietly(this.pid, 'SIGKILL');
    this.child.stdin.destroy();
    await Promise.race([this.exitedPromise, delay(EXIT_WAIT_MS)]);
  }

  /** Every process of this shell: the cgroup's members, or the union of tree, session id and tag. */
  private processPids(): number[] {
    if (this.options.cgroup) return groupPids(this.options.cgroup);
    const procs = listProcs();
    const pids = new Set<number>([this.pid]);
    for (const p of descendants(procs, this.pid)) pids.add(p.pid);
    for (const p of procs) {
      if (p.sid === this.pid || (p.pid !== process.pid && hasEnvEntry(p.pid, this.options.tag))) pids.add(p.pid);
    }
    return [...pids];
  }
}

function splitTag(tag: string): [string, string] {
  const eq = tag.indexOf('=');
  return [tag.slice(0, eq), tag.slice(eq + 1)];
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
