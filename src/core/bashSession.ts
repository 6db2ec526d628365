/**
 * One stateful bash over a backend's ShellProcess: runs framed commands one at a time, enforces
 * timeouts as a terminal would (^C, then SIGKILL for what ignores it), and reports shell death.
 */
import type { ShellExit, ShellProcess, StreamName } from './backend';
import { BoundedOutput } from './output';
import { StreamCapture } from './streamCapture';
import { SHELL_INIT_SCRIPT, commandLine, endMarkerRequest, markerTokens } from './framing';
import { newNonce } from '../common/ids';
import { delay } from '../common/delay';
import { logger } from '../common/logger';
import { DeadlineTimer, deadlinePassed } from './deadlineTimer';

export interface ExecOptions {
  timeoutMs: number;
  maxOutputBytes: number;
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
}

export interface BashSessionTimings {
  /** After ^C, how long to wait before SIGKILLing what the command started (FINDINGS: ~300 ms). */
  interruptGraceMs: number;
  /** After that SIGKILL, how long before the shell is declared unrecoverable. */
  killGraceMs: number;
  /** How long a new shell may take to answer its first command. */
  readyTimeoutMs: number;
}

/**
 * killGraceMs is generous on purpose: in Docker the kill runs in the session's own container, whose
 * CPU share a runaway command may be eating (seen: 3 s was not enough with 4 busy loops under 1 CPU).
 * It only matters for a shell that ignores ^C; declaring it BROKEN too early would lose its state.
 */
export const DEFAULT_TIMINGS: BashSessionTimings = { interruptGraceMs: 300, killGraceMs: 10_000, readyTimeoutMs: 20_000 };

/** How many kill graces a timed-out command's shell may take to come back, at most (however starved). */
const MAX_KILL_WAIT_ROUNDS = 3;

/**
 * Kills that must have been carried out, besides a kill grace since the first, before a shell is
 * declared dead sooner than that bound. A responsive container carries out a round every ~0.35 s
 * (20 in ~7 s, inside the grace): a shell that ignores ^C is declared dead after the grace, as
 * before. A starved one takes seconds per round (the soak: 5-10 rounds in 10-14 s before three shells
 * were given up for dead): there the shell is not to blame, and gets up to the bound.
 */
const MIN_LANDED_KILLS = 20;

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
  /** When the command times out, on the monotonic clock of `performance.now()`. */
  deadline: number;
  timedOut: boolean;
  /** Timed out and the shell is back: killing what the command left before answering. */
  reaping: boolean;
  stderrBytesAtInterrupt: number;
  /** Rounds of ^C and kill after the timeout (escalate), and how many of their kills were carried out. */
  escalations: number;
  landedKills: number;
  /** When the escalation's first round ran, and when its first kill was carried out (epoch ms). */
  firstRoundAtMs: number;
  firstKillLandedAtMs: number | null;
  /** The escalation's timers after a timeout (the command's own deadline is the session's DeadlineTimer). */
  timers: NodeJS.Timeout[];
  resolve: (r: ExecResult) => void;
  reject: (e: Error) => void;
}

export class BashSession {
  private running: Running | null = null;
  private deathReason: string | null = null;
  private closing = false;
  private deathListener: ((reason: string) => void) | null = null;
  /** ^Cs and kills of earlier commands still under way in the backend. */
  private readonly inFlight = new Set<Promise<void>>();
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

  execute(command: string, options: ExecOptions): Promise<ExecResult> {
    if (this.inFlight.size === 0) return this.run(command, options);
    return this.settleInFlight().then(() => this.run(command, options));
  }

  /**
   * Waits (at most a kill grace) for the ^Cs and kills an earlier command's timeout still has under
   * way. A backend that delivers them late (a starved container's lane) would otherwise deliver them
   * into this command: a ^C while bash reads its line discards the line (its start marker never
   * comes, and the session was given up for dead with bash idle at its prompt: soak, session 5); a
   * kill of "everything started since" the earlier command takes this one's processes too.
   */
  private async settleInFlight(): Promise<void> {
    await Promise.race([Promise.all(this.inFlight), delay(this.timings.killGraceMs)]);
    this.inFlight.clear();
  }

  /** Remembers a ^C or kill under way until it settles (see settleInFlight). */
  private track(op: void | Promise<unknown>): void {
    if (!op) return;
    const settled = op.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
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
        deadline: performance.now() + options.timeoutMs,
        timedOut: false,
        reaping: false,
        stderrBytesAtInterrupt: 0,
        escalations: 0,
        landedKills: 0,
        firstRoundAtMs: 0,
        firstKillLandedAtMs: null,
        timers: [],
        resolve,
        reject,
      };
      this.running = run;
      this.deadline.arm(run.deadline);
      this.shell.write(commandLine(command, nonce));
    });
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
    if (!run.timedOut) return this.finish(this.result(run));
    if (run.reaping) return;
    run.reaping = true;
    for (const t of run.timers) clearTimeout(t);
    // ^C brought the shell back, but what the command started in the background (immune to SIGINT
    // without job control) may still run: kill it before the next command can start anything.
    void this.killStarted(run).then(() => {
      if (this.running === run) this.finish(this.result(run));
    });
  }

  /**
   * Kills what `run` started; bounded, so a backend that cannot answer does not hold us forever.
   * True when the kill was carried out (whether or not it found anything), false when it failed or
   * did not come back within the bound.
   */
  private killStarted(run: Running): Promise<boolean> {
    const bound = new Promise<boolean>((resolve) => run.timers.push(setTimeout(() => resolve(false), this.timings.killGraceMs)));
    const started = this.shell.killStartedSince(run.startedAtMs);
    this.track(started);
    const kill = started.then(
      () => true,
      () => false,
    );
    return Promise.race([kill, bound]);
  }

  private result(run: Running): ExecResult {
    if (run.timedOut) {
      // What bash prints after ^C (a newline, tcsetattr noise) is not the command's output.
      run.err.truncateTo(run.stderrBytesAtInterrupt);
    }
    return {
      stdout: run.out.text(),
      stderr: run.err.text(),
      returnCode: run.timedOut ? -1 : (run.stdout.status ?? -1),
      timedOut: run.timedOut,
      truncated: run.out.truncated || run.err.truncated,
    };
  }

  private finish(outcome: ExecResult | Error): void {
    const run = this.running;
    if (!run) return;
    this.running = null;
    for (const t of run.timers) clearTimeout(t);
    if (outcome instanceof Error) run.reject(outcome);
    else run.resolve(outcome);
  }

  /** The deadline timer went off: the running command's time is up, or it is re-armed for the rest. */
  private onDeadline(): void {
    const run = this.running;
    if (!run || run.timedOut) return;
    if (deadlinePassed(run.deadline)) this.onTimeout(run);
    else this.deadline.arm(run.deadline); // it was armed for an earlier command's deadline
  }

  /** ^C first (state survives, as in a terminal); then SIGKILL what ignores it; then give up. */
  private onTimeout(run: Running): void {
    if (this.running !== run) return;
    run.timedOut = true;
    // Count what the capture still holds back too: it is output the command wrote before the ^C.
    run.stderrBytesAtInterrupt = run.err.byteLength + run.stderr.heldBodyBytes;
    this.track(this.shell.interrupt(() => this.wantsInterrupt(run)));
    this.shell.write(endMarkerRequest(run.nonce));
    run.timers.push(setTimeout(() => this.escalate(run), this.timings.interruptGraceMs));
  }

  /**
   * Until the shell answers: ^C again and SIGKILL what the command started, every grace period.
   * Repeating matters: a ^C that lands while a loop's child exits normally is taken by bash as
   * handled by the child (bash's "wait and cooperative exit"), and the loop goes on; a later one
   * lands between children and stops it.
   *
   * Gives up killGraceMs after the first kill that was carried out (`firstKillLandedAtMs`), once MIN_LANDED_KILLS
   * kills were: a shell that still does not answer while its container carries out kill after kill
   * ignores ^C for good. A container starved of CPU carries out its kills late and few, and its shell
   * is not to blame; that wait is bounded by MAX_KILL_WAIT_ROUNDS x killGraceMs from the first round
   * (`firstRoundAtMs`), and a container that stops answering altogether is the health check's to replace.
   */
  private escalate(run: Running): void {
    if (this.running !== run || run.reaping) return;
    const now = Date.now();
    run.firstRoundAtMs ||= now;
    const landedAt = run.firstKillLandedAtMs;
    const rounds = `${run.landedKills} of ${run.escalations} rounds of ^C and kill carried out`;
    if (landedAt !== null && now - landedAt >= this.timings.killGraceMs && run.landedKills >= MIN_LANDED_KILLS) {
      return this.onUnrecoverable(run, `${seconds(now - landedAt)} s after the first kill was carried out, ${rounds}`);
    }
    if (now - run.firstRoundAtMs >= MAX_KILL_WAIT_ROUNDS * this.timings.killGraceMs) {
      return this.onUnrecoverable(run, `${seconds(now - run.firstRoundAtMs)} s after the timeout, ${rounds}`);
    }
    run.escalations++;
    // ^C on every other round only. Once the command's processes are dead, bash only has to read and
    // run the end-marker request, and a ^C landing meanwhile (a starved container's lane delivers
    // it late, well after the request was written) discards that. (The soak's shells that never
    // answered with every kill carried out turned out to be another late ^C, one landing in the
    // NEXT command's line: settleInFlight.) A builtin loop, which only ^C stops, still gets one
    // every ~0.7 s.
    if (run.escalations % 2 === 1) this.track(this.shell.interrupt(() => this.wantsInterrupt(run)));
    // A ^C that lands while bash is reading the earlier request (bash reads a pipe a byte at a time)
    // discards the part it read: ask again, or the shell could never answer. Extra answers carry this
    // command's nonce and fall between commands, where output is dropped.
    this.shell.write(endMarkerRequest(run.nonce));
    // The next round starts once the kill has landed: a backend slow to kill (a busy container, a
    // queue of kills) must not make a healthy shell look unrecoverable.
    void this.killStarted(run).then((landed) => {
      if (this.running === run && !run.reaping) {
        if (landed) {
          run.landedKills++;
          run.firstKillLandedAtMs ??= Date.now();
        }
        run.timers.push(setTimeout(() => this.escalate(run), this.timings.interruptGraceMs));
      }
    });
  }

  /** A ^C for `run` still has a purpose: the shell has not answered yet (else it hits the next command). */
  private wantsInterrupt(run: Running): boolean {
    return this.running === run && !run.reaping;
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

function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}
