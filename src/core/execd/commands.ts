/**
 * One `/command`: its record (what /command/status answers), the line a runner shell evaluates for
 * it, and its run, event by event. A command runs in a subshell of a runner (SandboxExecd), so it
 * changes nothing for the next one (cd, exports, functions) and needs no new process of its own
 * beyond that fork; its timeout or interrupt is the BashSession's (^C, then everything it started is
 * killed), the same escalation as the pool API's execute.
 */
import type { BashSession } from '../session/bashSession';
import { ShellDiedError } from '../session/bashSession';
import { ansiCQuote } from '../session/framing';
import { LineSplitter } from './lineSplitter';
import { CommandLog } from './commandLog';
import { ExecdEvents, commandFailure, type EventSink } from './execdEvents';

export interface CommandRequest {
  command: string;
  /** Absolute, as the container sees it. */
  cwd: string;
  envs: Readonly<Record<string, string>>;
  /** null: none (the shell still needs a finite deadline: NO_TIMEOUT_MS). */
  timeoutMs: number | null;
  background: boolean;
}

/** A BashSession deadline must fit a Node timer (2^31 - 1 ms): "no timeout" is ~23 days. */
export const NO_TIMEOUT_MS = 2_000_000_000;

export interface CommandStatus {
  id: string;
  content: string;
  running: boolean;
  exitCode: number | null;
  error: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

export class CommandRecord {
  running = true;
  exitCode: number | null = null;
  error: string | null = null;
  readonly startedAt = new Date();
  finishedAt: Date | null = null;
  /** Set by an interrupt, so that the run reports one rather than a timeout. */
  interrupted = false;
  /** The runner while the command runs (an interrupt goes to it). */
  runner: BashSession | null = null;

  constructor(
    readonly id: string,
    readonly content: string,
    /** Background commands keep their output for /command/{id}/logs; foreground ones stream it. */
    readonly log: CommandLog | null,
  ) {}

  status(): CommandStatus {
    const { id, content, running, exitCode, error, startedAt, finishedAt } = this;
    return { id, content, running, exitCode, error, startedAt, finishedAt };
  }

  /** ^C and the kill of its tree; false when it is not running (or already being stopped). */
  interrupt(): boolean {
    if (!this.running || !this.runner) return false;
    this.interrupted = true;
    return this.runner.interrupt();
  }

  finish(exitCode: number | null, error: string | null): void {
    this.running = false;
    this.runner = null;
    this.exitCode = exitCode;
    this.error = error;
    this.finishedAt = new Date();
  }
}

/** The line a runner evaluates: a subshell that enters `cwd`, exports `envs` and evals the command. */
export function commandScript(req: CommandRequest): string {
  const exports = Object.entries(req.envs).map(([k, v]) => `builtin export ${k}=${ansiCQuote(v)};`);
  return `(builtin cd -- ${ansiCQuote(req.cwd)} || builtin exit $?;${exports.join('')}eval ${ansiCQuote(req.command)})`;
}

/**
 * Runs `record`'s command on `runner` and tells `sink` its events (init first; then its output, one
 * event a line; then execution_complete, or error with the exit status). Never rejects: a shell that
 * died is the command's error event.
 */
export async function runCommand(runner: BashSession, record: CommandRecord, req: CommandRequest, sink: EventSink): Promise<void> {
  const startedMs = performance.now();
  const emit = (stream: 'stdout' | 'stderr', line: string): void => {
    record.log?.addLine(line);
    sink(ExecdEvents.output(stream, line));
  };
  const out = new LineSplitter('bare', (line) => emit('stdout', line));
  const err = new LineSplitter('bare', (line) => emit('stderr', line));
  record.runner = runner;
  sink(ExecdEvents.init(record.id));
  try {
    const result = await runner.execute(commandScript(req), {
      timeoutMs: req.timeoutMs ?? NO_TIMEOUT_MS,
      maxOutputBytes: 0, // streamed, not collected
      onOutput: (stream, chunk) => (stream === 'stdout' ? out : err).push(chunk),
    });
    out.flush();
    err.flush();
    if (result.timedOut) {
      const why = record.interrupted
        ? 'interrupted: the command and everything it started were killed'
        : `timed out after ${req.timeoutMs} ms: the command and everything it started were killed`;
      record.finish(-1, why);
      sink(commandFailure(-1, why));
    } else if (result.returnCode !== 0) {
      record.finish(result.returnCode, `exit status ${result.returnCode}`);
      sink(commandFailure(result.returnCode, `exit status ${result.returnCode}`));
    } else {
      record.finish(0, null);
      sink(ExecdEvents.complete(performance.now() - startedMs));
    }
  } catch (e) {
    out.flush();
    err.flush();
    const why = e instanceof ShellDiedError ? `the sandbox's shell is gone (${e.reason})` : String(e);
    record.finish(null, why);
    sink(ExecdEvents.error('CommandExecError', why, [why]));
  }
}
