/**
 * A bash whose state lives from one run to the next (cd, variables, functions): a bash session of
 * `/session` and a `bash` code context of `/code`. One run at a time; a timeout or an interrupt
 * stops the run (^C, then what it started is killed) and keeps the shell and its state.
 */
import { BadRequestError } from '../../common/errors';
import { BashSession, ShellDiedError, type BashSessionTimings } from '../session/bashSession';
import { ansiCQuote, changeDirectoryCommand } from '../session/framing';
import type { Companion } from './companionShells';
import { LineSplitter, type LineShape } from './lineSplitter';
import { NO_TIMEOUT_MS } from './commands';
import { ExecdEvents, commandFailure, type EventSink } from './execdEvents';

/** How long a new shell may take to enter its directory (a starved container is slow). */
const ENTER_TIMEOUT_MS = 10_000;

export interface BashRunOptions {
  /** Entered first (and kept, as a `cd` would be). */
  cwd?: string;
  timeoutMs?: number | null;
  /** Sent as an execution_count event before the outcome (code contexts count their runs). */
  count?: number;
}

export class PersistentBash {
  private interrupted = false;
  /** Set as a run begins, before any await: a second run is refused (409) rather than queued. */
  private running = false;

  private constructor(
    private readonly companion: Companion,
    private readonly session: BashSession,
    private readonly shape: LineShape,
  ) {}

  /**
   * A started bash in `cwd` (made when missing, as execd does for a session's directory). A `cwd` it
   * cannot enter or make (a file in its way, no permission) is the request's fault: a 400 that names why.
   */
  static async open(companion: Companion, timings: BashSessionTimings, cwd: string, shape: LineShape): Promise<PersistentBash> {
    const session = new BashSession(companion.shell, timings);
    try {
      await session.start();
      const q = ansiCQuote(cwd);
      const r = await session.execute(`builtin cd -- ${q} 2>/dev/null || { mkdir -p -- ${q} && builtin cd -- ${q}; }`, {
        timeoutMs: ENTER_TIMEOUT_MS,
        maxOutputBytes: 4096,
      });
      if (r.timedOut) throw new Error(`no answer within ${ENTER_TIMEOUT_MS} ms entering ${cwd}`);
      if (r.returnCode !== 0) throw new BadRequestError(`cannot enter ${cwd}: ${r.stderr.trim() || `status ${r.returnCode}`}`);
    } catch (err) {
      await companion.close();
      throw err;
    }
    return new PersistentBash(companion, session, shape);
  }

  get busy(): boolean {
    return this.running;
  }

  get alive(): boolean {
    return this.session.alive;
  }

  /** Runs `code`: `init` with `id`, its output a line an event, then execution_complete or error. */
  async run(id: string, code: string, options: BashRunOptions, sink: EventSink): Promise<void> {
    const startedMs = performance.now();
    this.interrupted = false;
    this.running = true;
    sink(ExecdEvents.init(id));
    try {
      if (options.cwd !== undefined) {
        const entered = await this.execute(changeDirectoryCommand(options.cwd), ENTER_TIMEOUT_MS, sink);
        if (entered.returnCode !== 0) return sink(commandFailure(entered.returnCode, `cannot enter ${options.cwd}`));
      }
      const r = await this.execute(code, options.timeoutMs ?? NO_TIMEOUT_MS, sink);
      if (options.count !== undefined) sink(ExecdEvents.count(options.count));
      if (r.timedOut) {
        const what = this.interrupted ? 'interrupted' : `timed out after ${options.timeoutMs} ms`;
        sink(commandFailure(-1, `${what}: the command and everything it started were killed; the shell keeps its state`));
      } else if (r.returnCode !== 0) {
        sink(commandFailure(r.returnCode, `exit status ${r.returnCode}`));
      } else {
        sink(ExecdEvents.complete(performance.now() - startedMs));
      }
    } catch (e) {
      const why = e instanceof ShellDiedError ? `the shell is gone (${e.reason})` : String(e);
      sink(ExecdEvents.error('CommandExecError', why, [why]));
    } finally {
      this.running = false;
    }
  }

  /** Stops the running command; false when none runs. */
  interrupt(): boolean {
    this.interrupted = true;
    return this.session.interrupt();
  }

  close(): Promise<void> {
    return this.session.close().finally(() => this.companion.close());
  }

  private async execute(command: string, timeoutMs: number, sink: EventSink): Promise<{ returnCode: number; timedOut: boolean }> {
    const out = new LineSplitter(this.shape, (line) => sink(ExecdEvents.output('stdout', line)));
    const err = new LineSplitter(this.shape, (line) => sink(ExecdEvents.output('stderr', line)));
    try {
      return await this.session.execute(command, {
        timeoutMs,
        maxOutputBytes: 0,
        onOutput: (stream, chunk) => (stream === 'stdout' ? out : err).push(chunk),
      });
    } finally {
      out.flush();
      err.flush();
    }
  }
}
