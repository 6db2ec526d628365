/**
 * A local bash process: spawned detached (it leads its own session and process group, so SIGINT
 * to the group is a terminal's ^C), confined in a cgroup when possible, tagged through its
 * environment otherwise, so cleanup can find every process it started.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { ShellListener, ShellProcess, StreamName, UsageCounters } from '../../core/ports/backend';
import { CgroupUsage, v2UsageFiles } from '../cgroupCounters';
import { NO_USAGE } from '../../core/session/commandFacts';
import { SHELL_INIT_SCRIPT, ansiCQuote } from '../../core/session/framing';
import { FRESH_ANSWER, RECYCLE_TIMEOUT_MS, freshInCwd, recycleExecLine, StdoutExpectation } from '../shellRecycle';
import { addProcess, groupPids, killGroupAsync } from './cgroup';
import { descendants, epochMsToStartTicks, hasEnvEntry, killQuietly, listProcs, readProc } from './procfs';
import { delay } from '../../common/delay';
import type { IsolatedSpawn } from './localIsolation';
import { isolatedBash, privateDiskFull } from './isolatedProcs';

export const SHELL_ARGS = ['--norc', '--noprofile', '--noediting', '-i'];
const EXIT_WAIT_MS = 5000;
/** Kill passes before a recycle gives up (a fork loop outrunning them): the slot is then reopened. */
const RECYCLE_KILL_PASSES = 5;
/** The broker's umask, which a spawned bash inherits; a recycled one gets it back (a lease may change it). */
const INITIAL_UMASK = process.umask().toString(8).padStart(4, '0');

export interface LocalShellOptions {
  /** bash's absolute path: spawns use it, and so does the recycle's exec (the lease may have emptied PATH). */
  bash: string;
  cwd: string;
  env: Record<string, string>;
  /** `KEY=value` placed in the environment, for finding escapees when there is no cgroup. */
  tag: string;
  cgroup: string | null;
  /** Started through the session init (localIsolation.ts): in namespaces of its own, or joining a session's. */
  isolated?: IsolatedSpawn;
}

export class LocalShell implements ShellProcess {
  readonly description: string;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pid: number;
  private listener: ShellListener | null = null;
  private exited = false;
  private readonly exitedPromise: Promise<void>;
  private closePromise: Promise<void> | null = null;
  private readonly expectation = new StdoutExpectation();
  /** The cgroup's counters for termination facts; null without a cgroup (the /proc fallback cannot tell). */
  private readonly counters: CgroupUsage | null;

  /** The spawn's environment, tag included: a recycled bash gets exactly this back. */
  private readonly env: Record<string, string>;
  /**
   * bash's own pid: the spawned process's, or, isolated, that of bash below the session init's
   * waiter (and its namespace's init): ^C goes to its process group, joins and the disk's statfs use it.
   */
  private bashPid: number;

  constructor(private readonly options: LocalShellOptions) {
    const [key, value] = splitTag(options.tag);
    this.env = { ...options.env, [key]: value };
    const [file, args] = options.isolated ? [options.isolated.prefix[0], [...options.isolated.prefix.slice(1), options.bash, ...SHELL_ARGS]] : [options.bash, SHELL_ARGS];
    this.child = spawn(file, args, {
      cwd: options.cwd,
      env: this.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.pid = this.child.pid ?? -1;
    this.bashPid = options.isolated ? -1 : this.pid;
    this.description = `local ${options.isolated ? 'isolated ' : ''}bash pid ${this.pid}`;
    // Before bash reads a single command, so nothing it starts can be outside the group.
    if (options.cgroup && this.pid > 0) addProcess(options.cgroup, this.pid);
    this.counters = options.cgroup ? new CgroupUsage(v2UsageFiles(options.cgroup)) : null;
    this.child.stdout.on('data', (c: Buffer) => this.onData('stdout', c));
    this.child.stderr.on('data', (c: Buffer) => this.onData('stderr', c));
    this.child.stdin.on('error', () => undefined); // EPIPE after death; 'close' reports it
    this.exitedPromise = new Promise((resolve) => {
      // 'close' comes after both pipes drained, so no output is lost behind the exit.
      this.child.once('close', (code, signal) => {
        this.exited = true;
        this.expectation.cancel();
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

  /**
   * Isolated: once bash runs below the session init (its setup done), its pid is known and the
   * processes the waiter forked before it joined the cgroup are moved there too, before bash reads a
   * command. Rejects when bash is not there in time (the setup failed: its exit says why).
   */
  async started(): Promise<void> {
    if (!this.options.isolated || this.pid <= 0) return;
    const chain = await isolatedBash(this.pid, this.options.isolated.depth, () => this.exited);
    if (chain === null) throw new Error(`the session init did not start bash (${this.description})`);
    if (this.options.cgroup) for (const pid of chain) addProcess(this.options.cgroup, pid);
    this.bashPid = chain[chain.length - 1];
  }

  /** bash's pid on the host, once started (an isolated shell's extra shells join its namespaces); -1 before. */
  get hostBashPid(): number {
    return this.exited ? -1 : this.bashPid;
  }

  private onData(stream: StreamName, chunk: Buffer): void {
    if (this.expectation.active) this.expectation.feed(stream, chunk);
    else this.listener?.onData(stream, chunk);
  }

  setListener(listener: ShellListener): void {
    this.listener = listener;
  }

  write(text: string): void {
    if (!this.exited) this.child.stdin.write(text);
  }

  interrupt(): void {
    if (!this.exited && this.bashPid > 1) {
      try {
        process.kill(-this.bashPid, 'SIGINT');
      } catch {
        /* group already gone */
      }
    }
  }

  usage(resetPeak: boolean): UsageCounters {
    const counters = this.counters?.read(resetPeak) ?? NO_USAGE;
    // A command's end, isolated: whether its private tmpfs is full (the execute answer's disk_full).
    return this.options.isolated && !resetPeak ? { ...counters, diskFull: privateDiskFull(this.bashPid) } : counters;
  }

  async killStartedSince(sinceEpochMs: number): Promise<number> {
    // One tick of slack: start times are rounded to 10 ms.
    const since = epochMsToStartTicks(sinceEpochMs) - 1;
    let killed = 0;
    for (const pid of this.processPids()) {
      if (pid === this.pid || pid === this.bashPid) continue;
      const info = readProc(pid);
      if (info && info.startTicks >= since && killQuietly(pid, 'SIGKILL')) killed++;
    }
    return killed;
  }

  /**
   * A pristine shell in this same process instead of a new spawn (~5 ms of the event loop each):
   * everything the lease started is killed but bash, then bash `exec`s a fresh bash in `cwd` with the
   * spawn's environment and umask, and the framing's init. False when that cannot be done; the pool
   * then reopens.
   */
  async recycle(cwd: string, cwdReady: Promise<void> = Promise.resolve()): Promise<boolean> {
    // Isolated: the next lease gets new namespaces, never this one's files.
    if (this.exited || this.closePromise || this.options.isolated) return false;
    // No ^C first (the docker backend sends one): the shell is idle at its prompt, and an interactive
    // bash that takes SIGINT discards the input it has read, which could be the exec line itself.
    if (!this.killAllButShell()) return false;
    await cwdReady;
    if (this.exited) return false;
    const restore = `${this.exportsLine()};builtin umask ${INITIAL_UMASK}\n${SHELL_INIT_SCRIPT}`;
    const line = recycleExecLine(ansiCQuote(cwd), this.options.bash, restore);
    const answer = await this.expectation.wait(FRESH_ANSWER, () => this.write(line), RECYCLE_TIMEOUT_MS);
    return freshInCwd(answer) && !this.exited;
  }

  /** SIGKILL to every process of this shell but bash, until none is left (or too many passes). */
  private killAllButShell(): boolean {
    for (let pass = 0; pass < RECYCLE_KILL_PASSES; pass++) {
      const others = this.processPids().filter((pid) => pid !== this.pid && !isZombie(pid));
      if (others.length === 0) return true;
      for (const pid of others) killQuietly(pid, 'SIGKILL');
    }
    return false;
  }

  /** `exec -c` empties the environment: the spawn's own comes back, tag included. */
  private exportsLine(): string {
    return 'builtin export ' + Object.entries(this.env).map(([k, v]) => `${k}=${ansiCQuote(v)}`).join(' ');
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
    this.counters?.close();
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

/** A killed child stays a zombie until bash reaps it; it is dead already (never in cgroup.procs). */
function isZombie(pid: number): boolean {
  return readProc(pid)?.state === 'Z';
}

function splitTag(tag: string): [string, string] {
  const eq = tag.indexOf('=');
  return [tag.slice(0, eq), tag.slice(eq + 1)];
}

