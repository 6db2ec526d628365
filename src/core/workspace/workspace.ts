/**
 * A workspace: one long-lived bash in a real pseudo-terminal, shared by an agent (HTTP) and people
 * (terminal viewers). It knows no HTTP and no PTY library: the terminal is the backend's
 * (TerminalProcess), the events go to an EventRing, and the routes and sockets read both.
 *
 * Jobs: a command typed by anyone is a job, from its start mark to its end mark (shellIntegration.ts).
 * `execute` types the agent's command (bracketed paste, so a multi-line command is one job), emits
 * its command event at once, and waits for its end or the caller's wait. A shell that exits is
 * replaced at once by a fresh one in the same directory, with an event saying so. A workspace whose
 * slot is lost (its container failed) moves to a new slot (workspaceSlot.ts) with a fresh shell, and
 * keeps its events, their seq counter and its viewers; the job running then ends with an exit event
 * that says why.
 */
import { randomBytes } from 'node:crypto';
import type { ContainerRef, TerminalProcess } from '../ports/backend';
import type { WorkspacePlace } from './workspaceSlot';
import { errorMessage } from '../../common/errors';
import { WorkspaceBusyError, WorkspaceUnavailableError, type ExecuteAnswer, type JobSource, type WorkspaceLimits } from './workspaceTypes';

export { STILL_RUNNING } from './workspaceJob';
import { logger } from '../../common/logger';
import { EventRing } from './eventRing';
import { LineSplitter } from './terminalLines';
import { integrationEnv, MarkParser, type ShellMark } from './shellIntegration';
import { TerminalScrollback } from './scrollback';
import { WorkspaceJob } from './workspaceJob';
import { JobInterrupt } from './jobInterrupt';

const BRACKETED_PASTE_END = '\x1b[201~';
/** ^A ^K: to the line's start, then erase to its end (no bell on an empty line): a person's half-typed text does not prefix the agent's command. */
const CLEAR_LINE = '\x01\x0b';
/** A shell that dies sooner than this after its start is restarted with a growing delay. */
const QUICK_DEATH_MS = 2_000;
const RESTART_DELAY_MAX_MS = 30_000;

export class Workspace {
  readonly events: EventRing;
  readonly scrollback = new TerminalScrollback();
  private terminal: TerminalProcess | null = null;
  private job: WorkspaceJob | null = null;
  private atPrompt = false;
  /** Called with nothing at a prompt (or the workspace's end), or with why none can come soon: the shell died before its first. */
  private promptWaiters: ((failure?: string) => void)[] = [];
  /** The current shell has shown a prompt: one that dies before its first could not start at all. */
  private prompted = false;
  private readonly nonce = randomBytes(8).toString('hex');
  private size = { cols: 120, rows: 32 };
  private closed = false;
  private quickDeaths = 0;
  private moving = false;
  /** The shell's pid as its container sees it (its first mark says it); null until then. */
  private shellPid: number | null = null;
  /** When a person last typed into the terminal: a job they start cannot have processes older. */
  private lastKeysAtMs = Date.now();
  private interrupting: JobInterrupt | null = null;

  constructor(
    readonly id: string,
    private readonly slot: WorkspacePlace,
    private readonly limits: WorkspaceLimits,
  ) {
    this.events = new EventRing(limits.logEvents);
    slot.onLost((reason) => void this.move(reason));
  }

  /** The workspace directory, as its container sees it (a new one after a move). */
  get workdir(): string {
    return this.slot.workdir;
  }

  get container(): ContainerRef {
    return this.slot.container;
  }

  /** Opens the first shell and waits for its first prompt. */
  async start(): Promise<void> {
    await this.openShell();
    await this.waitForPrompt(this.limits.shellStartTimeoutMs);
  }

  /** Resolves at the shell's next prompt (now, when it is at one); rejects after `timeoutMs` or once the workspace is closed. */
  ready(timeoutMs: number): Promise<void> {
    return this.waitForPrompt(timeoutMs);
  }

  /** A shell is open (false between a shell's death and its replacement, and after close). */
  get shellOpen(): boolean {
    return this.terminal !== null;
  }

  get runningJobId(): string | null {
    return this.job && !this.job.ended ? this.job.id : null;
  }

  /** Types `command` into the terminal; answers when it ended or after `waitMs`, whichever is first. */
  async execute(command: string, waitMs: number): Promise<ExecuteAnswer> {
    const busy = this.runningJobId;
    if (busy) throw new WorkspaceBusyError(this.id, busy);
    if (!this.atPrompt) await this.waitForPrompt(this.limits.shellStartTimeoutMs);
    const again = this.runningJobId; // someone typed a command meanwhile
    if (again) throw new WorkspaceBusyError(this.id, again);
    const job = this.newJob(command, 'api');
    this.events.emit({ type: 'command', job_id: job.id, command, source: 'api' });
    this.atPrompt = false;
    const pasted = command.split(BRACKETED_PASTE_END).join('');
    this.terminal?.write(`${CLEAR_LINE}\x1b[200~${pasted}${BRACKETED_PASTE_END}\r`);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([job.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
    return job.answer();
  }

  /**
   * Ends the running job (jobInterrupt.ts): SIGINTs to the job whenever it owns the terminal and ^C
   * when bash does, never before bash has read the job's line; then kills of what it started, and
   * last a fresh shell. Its exit event says how it
   * ended: 130 for ^C, 137 for a kill, the old shell's status for a replaced shell. Returns the job,
   * or null when none runs; a second call while the first is under way adds nothing.
   */
  interrupt(): string | null {
    const job = this.job && !this.job.ended ? this.job : null;
    if (!job) return null;
    if (this.interrupting?.active) return job.id;
    const terminal = this.terminal;
    const current = (): boolean => this.terminal === terminal && terminal !== null;
    this.interrupting = new JobInterrupt(
      job,
      {
        pressCtrlC: () => terminal?.write('\x03'),
        interruptForeground: async () => current() && this.shellPid !== null && (await terminal!.interruptForeground(this.shellPid)),
        killStartedSince: async (sinceMs) => (current() ? terminal!.killStartedSince(this.shellPid, sinceMs) : 0),
        replaceShell: (why) => {
          if (!current()) return;
          this.events.emit({ type: 'interrupt_escalated', job_id: job.id, reason: why });
          void terminal!.close().catch(() => undefined);
        },
      },
    );
    this.interrupting.start();
    return job.id;
  }

  /** Keys for whatever reads the terminal (a prompt, a REPL), as they are. */
  input(data: string | Buffer): void {
    this.lastKeysAtMs = Date.now();
    this.terminal?.write(data);
  }

  resize(cols: number, rows: number): void {
    this.size = { cols, rows };
    this.terminal?.resize(cols, rows);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.job && !this.job.ended) this.finishJob(this.job, null);
    this.interrupting?.stop();
    for (const wake of this.promptWaiters.splice(0)) wake();
    await this.terminal?.close().catch(() => undefined);
    this.terminal = null;
  }

  private newJob(command: string, source: JobSource, typedAtMs?: number): WorkspaceJob {
    this.job = new WorkspaceJob(command, source, typedAtMs);
    return this.job;
  }

  private async openShell(): Promise<void> {
    const terminal = await this.slot.open(integrationEnv(this.nonce), this.size);
    if (this.closed) {
      await terminal.close();
      return;
    }
    this.terminal = terminal;
    this.shellPid = null;
    this.prompted = false;
    const openedMs = Date.now();
    // Room for the longest command line the agent may type, escaped (4 bytes per byte at worst).
    const parser = new MarkParser(this.nonce, 16 * 1024 * 1024, (data) => this.onOutput(data), (mark) => this.onMark(mark));
    terminal.onData((chunk) => {
      if (this.terminal === terminal) parser.push(chunk);
    });
    terminal.onExit((exit) => {
      if (this.terminal === terminal) this.onShellExit(exit.code, exit.reason, Date.now() - openedMs);
    });
  }

  private onOutput(data: Buffer): void {
    this.scrollback.push(data);
    const job = this.job;
    if (job?.running && !job.ended) job.lines?.push(data);
  }

  private onMark(mark: ShellMark): void {
    const job = this.job && !this.job.ended ? this.job : null;
    if (mark.kind === 'shell') {
      this.shellPid = mark.pid;
    } else if (mark.kind === 'continuation') {
      if (job && !job.running) job.waitsForRest = true;
    } else if (mark.kind === 'start') {
      this.atPrompt = false;
      if (job && !job.running) return this.begin(job);
      if (job) return; // a second start within one job (cannot happen with the script; harmless)
      const typed = this.newJob(mark.commandLine, 'terminal', Math.min(this.lastKeysAtMs, Date.now()));
      this.events.emit({ type: 'command', job_id: typed.id, command: typed.command, source: 'terminal' });
      this.begin(typed);
    } else if (mark.kind === 'end') {
      if (job) this.finishJob(job, mark.exitCode);
    } else {
      // A prompt with a job that never started: a line bash ran without a start mark (an empty one).
      if (job && this.job?.source === 'api') this.finishJob(job, mark.status);
      this.atPrompt = true;
      this.prompted = true;
      this.quickDeaths = 0;
      for (const wake of this.promptWaiters.splice(0)) wake();
    }
  }

  private begin(job: WorkspaceJob): void {
    job.begin(new LineSplitter((line) => this.onLine(job, line), this.limits.maxLineChars, this.limits.idleFlushMs));
  }

  private onLine(job: WorkspaceJob, line: string): void {
    job.keep(line, this.limits.maxJobOutputBytes);
    this.events.emit({ type: 'output', job_id: job.id, command: job.commandInEvents, source: job.source, stream: 'stdout', line });
  }

  private finishJob(job: WorkspaceJob, returncode: number | null, lostReason: string | null = null): void {
    job.end(returncode, lostReason);
    this.events.emit({ type: 'exit', job_id: job.id, returncode, duration_ms: Date.now() - job.startedMs, ...(lostReason ? { reason: lostReason } : {}) });
  }

  /** The shell died: with its container (then the workspace moves), or on its own (then it is replaced). */
  private onShellExit(code: number | null, reason: string, livedMs: number): void {
    this.terminal = null;
    this.atPrompt = false;
    if (this.closed) return;
    void this.slot.failure().then((lost) => (lost !== null ? this.move(lost) : this.replaceShell(code, reason, livedMs)));
  }

  private replaceShell(code: number | null, reason: string, livedMs: number): void {
    if (this.closed || this.moving || this.terminal) return; // a move came first
    // A shell that ended before its first prompt could not start: whoever waits for a prompt hears why
    // now (the image cannot run it, say), not after the wait's bound; a new shell is still tried.
    if (!this.prompted) this.failPromptWaiters(`its shell ended before its first prompt: ${reason}`);
    if (this.job && !this.job.ended) this.finishJob(this.job, code);
    this.quickDeaths = livedMs < QUICK_DEATH_MS ? this.quickDeaths + 1 : 0;
    const delayMs = this.quickDeaths <= 1 ? 0 : Math.min(RESTART_DELAY_MAX_MS, 250 * 2 ** this.quickDeaths);
    this.events.emit({ type: 'shell_restarted', reason, exit_code: code, restart_delay_ms: delayMs });
    setTimeout(() => void this.restart(), delayMs).unref();
  }

  private async restart(): Promise<void> {
    if (this.closed || this.moving || this.terminal) return; // a move opened one meanwhile
    try {
      await this.openShell();
    } catch (err) {
      // The container itself is asked: one that died with the shell may not be known lost yet.
      const lost = await this.slot.failure();
      if (lost !== null) return this.move(lost); // the container went with the shell
      if (this.closed) return; // its place ended it meanwhile (a group sandbox whose container failed)
      logger.warn({ workspace: this.id, err: errorMessage(err) }, 'workspace shell could not be restarted');
      this.failPromptWaiters(`its shell could not be started: ${errorMessage(err)}`);
      this.events.emit({ type: 'shell_restart_failed', reason: errorMessage(err) });
      this.quickDeaths++;
      setTimeout(() => void this.restart(), Math.min(RESTART_DELAY_MAX_MS, 250 * 2 ** this.quickDeaths)).unref();
    }
  }

  /**
   * The slot is lost: the old terminal goes (with its container, or killed), the running job ends
   * with an exit event that says why, and the workspace takes a new slot and a fresh shell there;
   * its events, their seq counter and its viewers stay. A failed take is retried with a growing delay.
   */
  private async move(reason: string): Promise<void> {
    if (this.moving || this.closed) return;
    this.moving = true;
    const old = this.terminal;
    this.terminal = null; // its exit, if it comes, is no longer ours
    this.atPrompt = false;
    void old?.close().catch(() => undefined);
    const why = `the workspace's slot was lost (${reason})`;
    if (this.job && !this.job.ended) this.finishJob(this.job, null, why);
    const from = this.workdir;
    for (let attempt = 1; !this.closed; attempt++) {
      try {
        await this.slot.move();
        if (this.closed) return this.slot.giveBack();
        await this.openShell();
        this.moving = false;
        this.events.emit({ type: 'workspace_moved', reason: why, previous_workdir: from, workdir: this.workdir });
        return;
      } catch (err) {
        logger.warn({ workspace: this.id, attempt, err: errorMessage(err) }, 'workspace could not move to a new slot');
        this.events.emit({ type: 'workspace_move_failed', reason: errorMessage(err), attempt });
        await new Promise((resolve) => setTimeout(resolve, Math.min(RESTART_DELAY_MAX_MS, 250 * 2 ** attempt)).unref());
      }
    }
  }

  private waitForPrompt(timeoutMs: number): Promise<void> {
    if (this.atPrompt) return Promise.resolve();
    if (this.closed) return Promise.reject(new WorkspaceUnavailableError(this.id, 'it was ended'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.promptWaiters = this.promptWaiters.filter((w) => w !== wake);
        reject(new WorkspaceUnavailableError(this.id, `no prompt within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const wake = (failure?: string): void => {
        clearTimeout(timer);
        if (failure !== undefined) reject(new WorkspaceUnavailableError(this.id, failure));
        else if (this.closed) reject(new WorkspaceUnavailableError(this.id, 'it was ended'));
        else resolve();
      };
      this.promptWaiters.push(wake);
    });
  }

  private failPromptWaiters(why: string): void {
    for (const wake of this.promptWaiters.splice(0)) wake(why);
  }
}
