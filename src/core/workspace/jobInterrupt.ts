/**
 * An interrupt that ends a workspace's running job, whatever the timing, and says how.
 *
 * A typed ^C reaches whatever process group owns the terminal when the terminal driver sees it.
 * Between bash reading a command line and the command's group taking the terminal, that is bash,
 * which shrugs a ^C off while it waits for its child; on a busy engine that window is seconds long,
 * and a fixed number of presses was seen to fall inside it every time. A ^C that comes while
 * readline is still reading the agent's pasted command is worse: the terminal flushes the rest of
 * the paste, its closing bracket with it, and readline waits for that bracket for ever. So the
 * interrupt does not guess. Round after round, it looks at who owns the terminal: while the job's
 * group does, SIGINT goes to that group; while bash does, and bash has read the job's line (its
 * start mark came, or the continuation prompt of an unfinished command), ^C is typed, which is what
 * stops a loop of builtins in bash itself and ends a continuation prompt. Before that, nothing is
 * sent: the line is whole in the terminal's queue, and bash is about to run it. A job still
 * running `killAfterMs` later ignores ^C (`trap '' INT`, a program that handles it): what it
 * started is killed, in rounds that take turns with the SIGINTs
 * (a SIGKILL that lands before a SIGINT lets bash go on with the rest of the line). A job that still
 * runs `replaceAfterMs` after a kill was carried out runs in bash itself and ignores ^C: the shell is
 * replaced (its exit ends the job). Every round waits for the previous signal to be carried out, so
 * a slow container is never mistaken for a stubborn job.
 */
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';

export interface InterruptTimings {
  /** Between two rounds (a look at the terminal's owner, a SIGINT or a kill). */
  roundMs: number;
  /** From the interrupt to the first kill: a program that handles ^C has this long to exit by itself. */
  killAfterMs: number;
  /** From the first kill carried out to replacing the shell, for a job that outlives its kills. */
  replaceAfterMs: number;
  /** Between two typed ^Cs at most: the terminal echoes each (`^C`) into the job's output. */
  typeEveryMs: number;
}

export const INTERRUPT_TIMINGS: InterruptTimings = { roundMs: 250, killAfterMs: 3_000, replaceAfterMs: 10_000, typeEveryMs: 1_000 };

/** What an interrupt does to the terminal; the workspace binds these to its current shell. */
export interface InterruptActions {
  /** Types ^C into the terminal. */
  pressCtrlC(): void;
  /** SIGINT to the job's group if it owns the terminal; true when sent. */
  interruptForeground(): Promise<boolean>;
  /** SIGKILL what the shell started since `sinceEpochMs` (the shell survives). */
  killStartedSince(sinceEpochMs: number): Promise<number>;
  /** Ends the shell, and the job with it: a fresh shell takes its place. */
  replaceShell(why: string): void;
}

/** The job as the interrupt sees it. */
export interface InterruptedJob {
  readonly id: string;
  /** Bash has read its line whole: it runs it, or waits at the continuation prompt for the rest. */
  readonly lineRead: boolean;
  readonly ended: boolean;
  readonly done: Promise<void>;
  /** No process of the job can have started before this (epoch ms): what the kills take. */
  readonly typedAtMs: number;
}

export class JobInterrupt {
  private stopped = false;
  private rounds = 0;
  private readonly startedMs = Date.now();
  private firstKillMs: number | null = null;
  /** When ^C was last typed (null: not yet). */
  private typedMs: number | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly job: InterruptedJob,
    private readonly actions: InterruptActions,
    private readonly timings: InterruptTimings = INTERRUPT_TIMINGS,
  ) {}

  /** Rounds until the job ends (or `stop`); the first comes at once. */
  start(): void {
    void this.job.done.then(() => this.stop());
    void this.round();
  }

  /** The job ended, or its shell or workspace went: no more rounds. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  get active(): boolean {
    return !this.stopped && !this.job.ended;
  }

  private mayType(): boolean {
    return this.typedMs === null || Date.now() - this.typedMs >= this.timings.typeEveryMs;
  }

  private next(): void {
    if (!this.active) return;
    this.timer = setTimeout(() => void this.round(), this.timings.roundMs);
    this.timer.unref();
  }

  private async round(): Promise<void> {
    if (!this.active) return;
    const now = Date.now();
    if (this.firstKillMs !== null && now - this.firstKillMs >= this.timings.replaceAfterMs) {
      this.stop();
      const why = `job ${this.job.id} outlived ^C and the kill of what it started for ${Math.round((now - this.startedMs) / 1000)} s`;
      logger.warn({ job: this.job.id }, `interrupt: ${why}; replacing the shell`);
      return this.actions.replaceShell(why);
    }
    const killing = now - this.startedMs >= this.timings.killAfterMs && this.rounds++ % 2 === 1;
    try {
      if (killing) {
        await this.actions.killStartedSince(this.job.typedAtMs);
        this.firstKillMs ??= Date.now();
      } else if (!(await this.actions.interruptForeground()) && this.active && this.job.lineRead && this.mayType()) {
        this.typedMs = Date.now();
        this.actions.pressCtrlC();
      }
    } catch (err) {
      // The shell or its container is going: its own exit or the slot's loss ends the job.
      logger.debug({ job: this.job.id, err: errorMessage(err) }, 'interrupt round failed');
    }
    this.next();
  }
}
