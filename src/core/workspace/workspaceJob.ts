/**
 * One job of a workspace: a command typed by the agent or a person, from its start mark to its end
 * mark, with the output it printed (for its /api/execute answer) and the promise its execute waits on.
 */
import { randomBytes } from 'node:crypto';
import type { LineSplitter } from './terminalLines';
import type { ExecuteAnswer, JobSource } from './workspaceTypes';

export const STILL_RUNNING = '--- Process still running, more output will stream via WebSocket ---';
const lostLine = (reason: string): string => `--- The job was lost: ${reason}; the workspace moved to a fresh shell ---`;
/**
 * Output events repeat their job's command (as the workspace API has them): a long one is cut there, or a
 * 1 MiB script would make every line of its output a 1 MiB event on the wire (its command event has it whole).
 */
const OUTPUT_EVENT_COMMAND_CHARS = 1024;

export class WorkspaceJob {
  readonly id = randomBytes(16).toString('hex');
  readonly commandInEvents: string;
  startedMs = Date.now();
  /** Its start mark arrived (an agent's job exists from the moment it was typed). */
  running = false;
  /** Before its start: bash read its line and shows the continuation prompt (an unclosed quote, say). */
  waitsForRest = false;
  output = '';
  lines: LineSplitter | null = null;
  returncode: number | null = null;
  ended = false;
  /** Why it ended without its end mark (its shell or container was lost), for its answer and exit event. */
  lostReason: string | null = null;
  readonly done: Promise<void>;
  private finished!: () => void;

  constructor(
    readonly command: string,
    readonly source: JobSource,
    /** No process of the job started before this (epoch ms): the agent's typing, or a person's last key. */
    readonly typedAtMs: number = Date.now(),
  ) {
    this.commandInEvents = command.length > OUTPUT_EVENT_COMMAND_CHARS ? `${command.slice(0, OUTPUT_EVENT_COMMAND_CHARS)}…` : command;
    this.done = new Promise<void>((resolve) => (this.finished = resolve));
  }

  /** Bash has read the job's line whole (it runs it, or waits for the rest): a ^C can no longer cut the line short. */
  get lineRead(): boolean {
    return this.running || this.waitsForRest;
  }

  /** Its start mark: its output is cut into lines from here. */
  begin(lines: LineSplitter): void {
    this.running = true;
    this.startedMs = Date.now();
    this.lines = lines;
  }

  /** A line for its answer, while the answer holds less than `maxBytes`. */
  keep(line: string, maxBytes: number): void {
    if (this.output.length < maxBytes) this.output += `${line}\n`;
  }

  end(returncode: number | null, lostReason: string | null): void {
    this.lines?.end(); // its last partial line belongs to it
    this.ended = true;
    this.returncode = returncode;
    this.lostReason = lostReason;
    this.finished();
  }

  /** Its /api/execute answer: ended, or still running with the workspace API's still-running line. */
  answer(): ExecuteAnswer {
    if (this.ended) return { job_id: this.id, command: this.command, returncode: this.returncode, stdout: this.output + (this.lostReason ? lostLine(this.lostReason) : '') };
    return { job_id: this.id, command: this.command, returncode: null, stdout: this.output + STILL_RUNNING };
  }
}
