/**
 * A python code context: one persistent `python3` (pythonDriver.ts) in a companion shell, its globals
 * alive across `/code` runs. A run streams the cell's output a line an event, then the count, and the
 * result (`result`) or the exception with its traceback (`error`). An interrupt is a terminal's ^C
 * (KeyboardInterrupt in the cell) escalating to the kill of what the cell started, as a command's
 * timeout does (timeoutEscalation.ts); an interpreter that never answers is closed.
 */
import type { ShellExit, StreamName } from '../ports/backend';
import type { BashSessionTimings } from '../session/bashSession';
import { ansiCQuote, markerTokens } from '../session/framing';
import { StreamCapture } from '../session/streamCapture';
import { InFlightSignals, TimeoutEscalation } from '../session/timeoutEscalation';
import { newNonce } from '../../common/ids';
import { NotSupportedError } from '../../common/errors';
import type { Companion } from './companionShells';
import { LineSplitter } from './lineSplitter';
import { ExecdEvents, type EventSink } from './execdEvents';
import { PYTHON_DRIVER, PYTHON_MISSING, PYTHON_READY } from './pythonDriver';

const START_TIMEOUT_MS = 20_000;

interface Outcome {
  count?: number;
  result?: string;
  error?: { ename: string; evalue: string; traceback: string[] };
}

interface Cell {
  nonce: string;
  startedMs: number;
  startedAtEpochMs: number;
  stdout: StreamCapture;
  stderr: StreamCapture;
  out: LineSplitter;
  err: LineSplitter;
  sink: EventSink;
  escalation: TimeoutEscalation | null;
  done: () => void;
}

export class PythonContext {
  private cell: Cell | null = null;
  private deathReason: string | null = null;
  private readonly inFlight = new InFlightSignals();
  /** Before the driver said it is ready: what stdout said so far. */
  private greeting = '';
  private started: ((outcome: 'ready' | 'missing' | Error) => void) | null = null;
  private deathListener: (() => void) | null = null;

  private constructor(
    private readonly companion: Companion,
    private readonly timings: BashSessionTimings,
  ) {
    companion.shell.setListener({ onData: (s, c) => this.onData(s, c), onExit: (e) => this.onExit(e) });
  }

  /** A running interpreter in `cwd`; NotSupportedError when the sandbox has no python3. */
  static async open(companion: Companion, timings: BashSessionTimings, cwd: string): Promise<PythonContext> {
    const ctx = new PythonContext(companion, timings);
    const outcome = await new Promise<'ready' | 'missing' | Error>((resolve) => {
      const timer = setTimeout(() => resolve(new Error(`python3 did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      ctx.started = (o) => {
        clearTimeout(timer);
        resolve(o);
      };
      companion.shell.write(
        `builtin cd -- ${ansiCQuote(cwd)} 2>/dev/null; command -v python3 >/dev/null 2>&1 || builtin printf '\\n${PYTHON_MISSING}\\n'; ` +
          `exec python3 -u -c ${ansiCQuote(PYTHON_DRIVER)}\n`,
      );
    });
    ctx.started = null;
    if (outcome === 'ready') return ctx;
    await companion.close();
    if (outcome === 'missing') throw new NotSupportedError('python is not available in this sandbox (no python3 on its PATH); supported here: bash');
    throw outcome;
  }

  get busy(): boolean {
    return this.cell !== null;
  }

  get alive(): boolean {
    return this.deathReason === null;
  }

  /** Called once when the interpreter dies on its own (not when closed). */
  onDeath(listener: () => void): void {
    this.deathListener = listener;
  }

  /** Runs one cell; resolves when its last event was told. Never rejects. */
  run(id: string, code: string, sink: EventSink): Promise<void> {
    sink(ExecdEvents.init(id));
    if (this.deathReason !== null) {
      sink(ExecdEvents.error('ContextDied', this.deathReason, [this.deathReason]));
      return Promise.resolve();
    }
    const nonce = newNonce();
    const tokens = markerTokens(nonce);
    return new Promise<void>((resolve) => {
      const out = new LineSplitter('kept', (line) => sink(ExecdEvents.output('stdout', line)));
      const err = new LineSplitter('kept', (line) => sink(ExecdEvents.output('stderr', line)));
      this.cell = {
        nonce,
        startedMs: performance.now(),
        startedAtEpochMs: Date.now(),
        stdout: new StreamCapture(tokens.start, tokens.end, true, (c) => out.push(c)),
        stderr: new StreamCapture(tokens.start, tokens.end, false, (c) => err.push(c)),
        out,
        err,
        sink,
        escalation: null,
        done: resolve,
      };
      this.companion.shell.write(JSON.stringify({ nonce, code }) + '\n');
    });
  }

  /** KeyboardInterrupt in the running cell, then the kill of what it started; false when none runs. */
  interrupt(): boolean {
    const cell = this.cell;
    if (!cell || cell.escalation) return false;
    cell.escalation = new TimeoutEscalation(this.companion.shell, this.timings, this.inFlight, cell.nonce, cell.startedAtEpochMs, {
      isCurrent: () => this.cell === cell,
      giveUp: (why) => {
        this.end(cell, { error: { ename: 'KeyboardInterrupt', evalue: 'the interpreter did not answer the interrupt', traceback: [why] } });
        void this.close();
      },
    });
    cell.escalation.begin();
    return true;
  }

  close(): Promise<void> {
    if (this.deathReason === null) this.deathReason = 'the context was closed';
    if (this.cell) this.end(this.cell, { error: { ename: 'ContextDied', evalue: this.deathReason, traceback: [] } });
    return this.companion.close();
  }

  private onData(stream: StreamName, chunk: Buffer): void {
    if (this.started) return this.onGreeting(stream, chunk);
    const cell = this.cell;
    if (!cell) return;
    (stream === 'stdout' ? cell.stdout : cell.stderr).push(chunk);
    if (!cell.stdout.done || !cell.stderr.done) return;
    let outcome: Outcome;
    try {
      outcome = JSON.parse(cell.stdout.trailer ?? '') as Outcome;
    } catch {
      outcome = { error: { ename: 'InternalError', evalue: 'the interpreter answered in a form execd does not know', traceback: [] } };
    }
    // What the cell left running (a subprocess in the background) dies before the next cell.
    if (cell.escalation) void cell.escalation.reap().then(() => this.end(cell, outcome));
    else this.end(cell, outcome);
  }

  private onGreeting(stream: StreamName, chunk: Buffer): void {
    if (stream !== 'stdout') return;
    this.greeting = (this.greeting + chunk.toString('latin1')).slice(-256);
    if (this.greeting.includes(`\n${PYTHON_READY}\n`)) this.started?.('ready');
    else if (this.greeting.includes(`\n${PYTHON_MISSING}\n`)) this.started?.('missing');
  }

  /** The cell's last events: its output's last lines, its count, then its result or its error. */
  private end(cell: Cell, outcome: Outcome): void {
    if (this.cell !== cell) return;
    this.cell = null;
    cell.escalation?.stop();
    cell.out.flush();
    cell.err.flush();
    if (outcome.count !== undefined) cell.sink(ExecdEvents.count(outcome.count));
    if (outcome.error) {
      const { ename, evalue, traceback } = outcome.error;
      cell.sink(ExecdEvents.error(ename, evalue, traceback));
    } else {
      if (outcome.result !== undefined) cell.sink(ExecdEvents.result(outcome.result));
      cell.sink(ExecdEvents.complete(performance.now() - cell.startedMs));
    }
    cell.done();
  }

  private onExit(exit: ShellExit): void {
    this.started?.(new Error(`the shell ended before python3 started: ${exit.reason}`));
    if (this.deathReason !== null) return;
    this.deathReason = `the interpreter is gone (${exit.reason})`;
    if (this.cell) this.end(this.cell, { error: { ename: 'ContextDied', evalue: this.deathReason, traceback: [] } });
    void this.companion.close();
    this.deathListener?.();
  }
}
