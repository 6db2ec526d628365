/**
 * A local bash in a real pseudo-terminal. Why @lydell/node-pty: it is node-pty (the PTY library
 * terminals such as VS Code use) with its native addon prebuilt for Linux, macOS and Windows inside
 * the package, so `npm ci` needs no compiler; node:child_process has no way to open a PTY.
 *
 * It joins the slot's cgroup where there is one, so the slot's cleanup after the workspace also finds
 * what it left. Its own close kills by the PTY's session (bash leads it) and the tag in the
 * processes' environment, never the whole cgroup: the slot's pipe shell lives there too.
 */
import * as pty from '@lydell/node-pty';
import type { TerminalProcess } from '../../core/ports/backend';
import { addProcess } from './cgroup';
import { epochMsToStartTicks, hasEnvEntry, killQuietly, listProcs, readProc, signalGroupQuietly } from './procfs';
import { delay } from '../../common/delay';
import type { IsolatedSpawn } from './localIsolation';
import { isolatedBash } from './isolatedProcs';

const EXIT_WAIT_MS = 5_000;

export interface LocalTerminalOptions {
  bash: string;
  cwd: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
  /** `KEY=value`, in env too: finds escapees without a cgroup. */
  tag: string;
  cgroup: string | null;
  /** In the namespaces of its slot's isolated session (localIsolation.ts): bash runs below the session init's waiter. */
  isolated?: IsolatedSpawn;
}

/** An isolated terminal's bash enters its working directory itself: the session init starts it at the session's root. */
const ENTER_CWD = 'cd -- "$1" 2>/dev/null; exec "$0" --norc --noprofile -i';

export class LocalTerminal implements TerminalProcess {
  readonly description: string;
  private readonly pty: pty.IPty;
  private exited = false;
  private readonly exitedPromise: Promise<void>;
  private closePromise: Promise<void> | null = null;

  constructor(private readonly options: LocalTerminalOptions) {
    const [file, args] = options.isolated
      ? [options.isolated.prefix[0], [...options.isolated.prefix.slice(1), options.bash, '-c', ENTER_CWD, options.bash, options.cwd]]
      : [options.bash, ['--norc', '--noprofile', '-i']];
    this.pty = pty.spawn(file, args, {
      name: 'xterm-256color',
      cols: options.cols,
      rows: options.rows,
      cwd: options.cwd,
      env: options.env,
      // Bytes, not strings: a terminal's output must reach viewers as bash wrote it (invalid UTF-8 too).
      encoding: null,
    });
    if (options.cgroup) addProcess(options.cgroup, this.pty.pid);
    this.description = `local terminal bash pid ${this.pty.pid}`;
    this.exitedPromise = new Promise((resolve) => this.pty.onExit(() => resolve()));
    this.pty.onExit(() => (this.exited = true));
  }

  write(data: string | Buffer): void {
    // Without an encoding the PTY's socket takes bytes; its typing says string.
    if (!this.exited) this.pty.write((typeof data === 'string' ? Buffer.from(data, 'utf8') : data) as unknown as string);
  }

  resize(cols: number, rows: number): void {
    if (!this.exited) this.pty.resize(cols, rows);
  }

  onData(listener: (chunk: Buffer) => void): void {
    this.pty.onData((data: string | Buffer) => listener(typeof data === 'string' ? Buffer.from(data, 'utf8') : data));
  }

  onExit(listener: (exit: { code: number | null; reason: string }) => void): void {
    this.pty.onExit(({ exitCode, signal }) => {
      const code = signal ? 128 + signal : exitCode;
      listener({ code, reason: signal ? `bash was killed by signal ${signal}` : `bash exited with status ${exitCode}` });
    });
  }

  /**
   * From /proc: bash's process group against its terminal's foreground group (the PTY's pid is
   * bash's; isolated, bash is below the session init's waiter, and `shellPid`, its `$$`, is its pid
   * in the session's namespace: its host pid is looked up instead).
   */
  async interruptForeground(shellPid: number): Promise<boolean> {
    const isolated = this.options.isolated;
    const hostPid = isolated ? (await isolatedBash(this.pty.pid, isolated.depth, () => this.exited))?.at(-1) : shellPid;
    const shell = hostPid === undefined ? null : readProc(hostPid);
    if (this.exited || !shell || shell.tpgid <= 0 || shell.tpgid === shell.pgrp) return false;
    return signalGroupQuietly(shell.tpgid, 'SIGINT');
  }

  /** The PTY's session (bash leads it) and the tag, started since then: bash itself is kept. */
  async killStartedSince(_shellPid: number | null, sinceEpochMs: number): Promise<number> {
    // One tick of slack: start times are rounded to 10 ms.
    const since = epochMsToStartTicks(sinceEpochMs) - 1;
    let killed = 0;
    for (const p of listProcs()) {
      if (p.pid === this.pty.pid || p.pid === process.pid || p.startTicks < since) continue;
      if ((p.sid === this.pty.pid || hasEnvEntry(p.pid, this.options.tag)) && killQuietly(p.pid, 'SIGKILL')) killed++;
    }
    return killed;
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    const pid = this.pty.pid;
    for (const p of listProcs()) {
      if (p.pid !== process.pid && (p.sid === pid || hasEnvEntry(p.pid, this.options.tag))) killQuietly(p.pid, 'SIGKILL');
    }
    killQuietly(pid, 'SIGKILL');
    await Promise.race([this.exitedPromise, delay(EXIT_WAIT_MS)]);
  }
}
