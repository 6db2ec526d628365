/**
 * One stateful bash over a backend's ShellProcess: runs framed commands one at a time, hands a
 * command whose time is up to a TimeoutEscalation (timeoutEscalation.ts), and reports shell death.
 */
import type { ShellExit, ShellProcess, StreamName, UsageCounters } from '../ports/backend';
import { BoundedOutput } from './output';
import { StreamCapture } from './streamCapture';
import { SHELL_INIT_SCRIPT, changeDirectoryCommand, commandLine, markerTokens } from './framing';
import { newNonce } from '../../common/ids';
import { logger } from '../../common/logger';
import { DeadlineTimer, deadlinePassed } from './deadlineTimer';
import { InFlightSignals, TimeoutEscalation, type EscalationTimings } from './timeoutEscalation';
import { NO_USAGE, commandFacts, type CommandFacts } from './commandFacts';

export interface ExecOptions {
  timeoutMs: number;
  maxOutputBytes: number;
  /** Read the shell's cgroup counters around the command (the facts' cpu, memory and OOM figures; else null). */
  usage?: boolean;
  /** Live output, as it arrives (streamed consumers); the result still carries all of it. */
  onOutput?: (stream: StreamName, chunk: Buffer) => void;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  /** bash's exit status, or -1 when the command timed out. */
  returnCode: number;
  timedOut: boolean;
  truncated: boolean;
  /** How it ended and what it cost, from the kernel (commandFacts.ts). */
  facts: CommandFacts;
}

export interface BashSessionTimings extends EscalationTimings {
  /** How long a new shell may take to answer its first command. */
  readyTimeoutMs: number;
}

/**
 * killGraceMs is generous on purpose: in Docker the kill runs in the session's own container, whose
 * CPU share a runaway command may be eating (seen: 3 s was not enough with 4 busy loops under 1 CPU).
 * It only matters for a shell that ignores ^C; declaring it BROKEN too early would lose its state.
 */
export const DEFAULT_TIMINGS: BashSessionTimings = { interruptGraceMs: 300, killGraceMs: 10_000, readyTimeoutMs: 20_000 };

/** The shell is gone: it exited, was killed, or could not be brought back after a timeout. */
export class ShellDiedError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

interface Running {
  nonce: string;
  stdout: StreamCapture;
  stderr: StreamCapture;
  out: BoundedOutput;
  err: BoundedOutput;
  startedAtMs: number;
  /** When the line was written (performance.now()), and the shell's cgroup counters then. */
  startedPerfMs: number;
  usageBefore: UsageCounters;
  usage: boolean;
  /** When the command times out, on the monotonic clock of `performance.now()`. */
  deadline: number;
  /** Set once the command timed out (the command's own deadline is the session's DeadlineTimer). */
  timeout: TimeoutEscalation | null;
  stderrBytesAtInterrupt: number;
  resolve: (r: ExecResult) => void;
  reject: (e: Error) => void;
}

export class BashSession {
  private running: Running | null = null;
  private deathReason: string | null = null;
  private closing = false;
  private deathListener: ((reason: string) => void) | null = null;
  /** ^Cs and kills of earlier commands still under way in the backend. */
  private readonly inFlight = new InFlightSignals();
  private readonly deadline = new DeadlineTimer(() => this.onDeadline());

  constructor(
    readonly shell: ShellProcess,
    private readonly timings: BashSessionTimings = DEFAULT_TIMINGS,
  ) {
    shell.setListener({ onData: (s, c) => this.onData(s, c), onExit: (e) => this.onExit(e) });
  }

  get busy(): boolean {
    return this.running !== null;
  }

  get alive(): boolean {
    return this.deathReason === null;
  }

  /** Called once if the shell dies on its own (not when we close it). */
  onDeath(listener: (reason: string) => void): void {
    this.deathListener = listener;
  }

  /** Defines the framing functions and waits for the shell to answer. */
  async start(): Promise<void> {
    this.shell.write(SHELL_INIT_SCRIPT);
    await this.execute('', { timeoutMs: this.timings.readyTimeoutMs, maxOutputBytes: 4096 });
  }

  /** `cd` to `dir` as a command of its own (the session's state keeps it); no output expected. */
  changeDirectory(dir: string, timeoutMs: number): Promise<ExecResult> {
    return this.execute(changeDirectoryCommand(dir), { timeoutMs, maxOutputBytes: 4096 });
  }

  execute(command: string, options: ExecOptions): Promise<ExecResult> {
    if (this.inFlight.empty) return this.run(command, options);
    // At most a kill grace: a ^C or kill still under way would land in this command (InFlightSignals).
    return this.inFlight.settle(this.timings.killGraceMs).then(() => this.run(command, options));
  }

  private run(command: string, options: ExecOptions): Promise<ExecResult> {
    if (this.deathReason !== null) return Promise.reject(new ShellDiedError(this.deathReason));
    if (this.running) return Promise.reject(new Error('BashSession.execute called while busy'));
    const nonce = newNonce();
    const tokens = markerTokens(nonce);
    const out = new BoundedOutput(options.maxOutputBytes);
    const err = new BoundedOutput(options.maxOutputBytes);
    const live = options.onOutput;
    return new Promise<ExecResult>((resolve, reject) => {
      const run: Running = {
        nonce,
        out,
        err,
        stdout: new StreamCapture(tokens.start, tokens.end, true, (c) => {
          out.push(c);
          live?.('stdout', c);
        }),
        stderr: new StreamCapture(tokens.start, tokens.end, false, (c) => {
          err.push(c);
          live?.('stderr', c);
        }),
        startedAtMs: Date.now(),
        startedPerfMs: 0,
        usageBefore: NO_USAGE,
        usage: options.usage === true,
        deadline: performance.now() + options.timeoutMs,
        timeout: null,
        stderrBytesAtInterrupt: 0,
        resolve,
        reject,
      };
      this.running = run;
      this.deadline.arm(run.deadline);
      if (run.usage) run.usageBefore = this.shell.usage?.(true) ?? NO_USAGE;
      run.startedPerfMs = performance.now();
      this.shell.write(commandLine(command, nonce));
    });
  }

  /**
   * Ends the running command now, as its timeout would (^C, then what it started is killed; the shell
   * and its state survive). Its result says timedOut. False when nothing runs or it is ending already.
   */
  interrupt(): boolean {
    const run = this.running;
    if (!run || run.timeout) return false;
    this.onTimeout(run);
    return true;
  }

  /** Kills the shell and everything it started. The session is unusable afterwards. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.deathReason === null) this.deathReason = 'session closed';
    this.finish(new ShellDiedError('session closed'));
    this.deadline.stop();
    await this.shell.close();
  }

  private onData(stream: StreamName, chunk: Buffer): void {
    const run = this.running;
    if (!run) return; // between commands: prompts, job notices, late background output
    if (stream === 'stdout') run.stdout.push(chunk);
    else run.stderr.push(chunk);
    if (run.stdout.done && run.stderr.done) this.complete(run);
  }

  private complete(run: Running): void {
    if (!run.timeout) return this.finish(this.result(run));
    void run.timeout.reap().then((first) => {
      if (first && this.running === run) this.finish(this.result(run));
    });
  }

  private result(run: Running): ExecResult {
    const durationMs = performance.now() - run.startedPerfMs;
    if (run.timeout) {
      // What bash prints after ^C (a newline, tcsetattr noise) is not the command's output.
      run.err.truncateTo(run.stderrBytesAtInterrupt);
    }
    return {
      stdout: run.out.text(),
      stderr: run.err.text(),
      returnCode: run.timeout ? -1 : (run.stdout.status ?? -1),
      timedOut: run.timeout !== null,
      truncated: run.out.truncated || run.err.truncated,
      facts: commandFacts(run.usageBefore, (run.usage && this.shell.usage?.(false)) || NO_USAGE, {
        status: run.stdout.status,
        interrupted: run.timeout !== null,
        durationMs,
        droppedStdout: run.out.dropped,
        droppedStderr: run.err.dropped,
      }),
    };
  }

  private finish(outcome: ExecResult | Error): void {
    const run = this.running;
    if (!run) return;
    this.running = null;
    run.timeout?.stop();
    if (outcome instanceof Error) run.reject(outcome);
    else run.resolve(outcome);
  }

  /** The deadline timer went off: the running command's time is up, or it is re-armed for the rest. */
  private onDeadline(): void {
    const run = this.running;
    if (!run || run.timeout) return;
    if (deadlinePassed(run.deadline)) this.onTimeout(run);
    else this.deadline.arm(run.deadline); // it was armed for an earlier command's deadline
  }

  /** ^C first (state survives, as in a terminal); then SIGKILL what ignores it; then give up. */
  private onTimeout(run: Running): void {
    if (this.running !== run) return;
    // Count what the capture still holds back too: it is output the command wrote before the ^C.
    run.stderrBytesAtInterrupt = run.err.byteLength + run.stderr.heldBodyBytes;
    run.timeout = new TimeoutEscalation(this.shell, this.timings, this.inFlight, run.nonce, run.startedAtMs, {
      isCurrent: () => this.running === run,
      giveUp: (why) => this.onUnrecoverable(run, why),
    });
    run.timeout.begin();
  }

  /** `why`: what the escalation saw, so that a 410 tells a shell that ignored ^C from a starved container. */
  private onUnrecoverable(run: Running, why: string): void {
    if (this.running !== run) return;
    const reason = `the shell did not come back after the command timed out: ${why}`;
    this.deathReason = reason;
    this.finish(new ShellDiedError(reason));
    // Queued before the close's kills: what the shell was doing when it was given up.
    void this.shell
      .describe?.()
      .then((processes) => logger.warn({ shell: this.shell.description, processes }, 'a timed-out shell was given up'))
      .catch(() => undefined);
    this.deadline.stop();
    void this.shell.close().catch(() => undefined);
    this.deathListener?.(reason);
  }

  private onExit(exit: ShellExit): void {
    if (this.deathReason !== null) return;
    this.deathReason = exit.reason;
    this.finish(new ShellDiedError(exit.reason));
    this.deadline.stop();
    if (!this.closing) this.deathListener?.(exit.reason);
  }
}
