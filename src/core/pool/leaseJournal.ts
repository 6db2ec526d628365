/**
 * A lease's trajectory: its executes in order (command, timing, exit code, head and tail of each
 * stream), bounded in entries and in bytes per entry, for GET /session/{id}/history and, on release,
 * the trajectory file (trajectoryFile.ts). Records are kept in the form both show them (snake_case
 * JSON), so neither has a mapping of its own to keep in step.
 */
import type { ExecResult } from '../session/bashSession';

export interface JournalLimits {
  /** Entries kept per lease; beyond it the oldest are dropped (and counted). */
  entries: number;
  /** Characters kept of each stream's head, and as many of its tail; of a command too. */
  outputChars: number;
}

export const DEFAULT_JOURNAL_LIMITS: JournalLimits = { entries: 256, outputChars: 1024 };

export interface JournalEntry {
  seq: number;
  request_id: string | null;
  command: string;
  /** When the pool took the execute (epoch ms). */
  started_at_ms: number;
  duration_ms: number;
  /** null when the execute failed without a result (`error` says how). */
  return_code: number | null;
  timed_out: boolean;
  signal: string | null;
  stdout_head: string;
  stdout_tail: string;
  stderr_head: string;
  stderr_tail: string;
  /** Characters of each stream's answer (the tail is its last characters when this exceeds twice the head). */
  stdout_chars: number;
  stderr_chars: number;
  error: string | null;
}

export class LeaseJournal {
  private readonly ring: JournalEntry[] = [];
  private next = 0;
  private droppedCount = 0;

  constructor(private readonly limits: JournalLimits) {}

  /** Records one execute: its result, or the code of the error it ended with. */
  record(command: string, requestId: string | null, startedAtMs: number, durationMs: number, outcome: ExecResult | { error: string }): void {
    const n = this.limits.outputChars;
    const result = 'error' in outcome ? null : outcome;
    const [stdoutHead, stdoutTail] = headTail(result?.stdout ?? '', n);
    const [stderrHead, stderrTail] = headTail(result?.stderr ?? '', n);
    const entry: JournalEntry = {
      seq: this.next++,
      request_id: requestId,
      command: detached(command.length > 2 * n ? `${command.slice(0, n)}[...]${command.slice(-n)}` : command),
      started_at_ms: startedAtMs,
      duration_ms: Math.round(durationMs * 1000) / 1000,
      return_code: result?.returnCode ?? null,
      timed_out: result?.timedOut ?? false,
      signal: result?.facts.signal ?? null,
      stdout_head: stdoutHead,
      stdout_tail: stdoutTail,
      stderr_head: stderrHead,
      stderr_tail: stderrTail,
      stdout_chars: result?.stdout.length ?? 0,
      stderr_chars: result?.stderr.length ?? 0,
      error: 'error' in outcome ? outcome.error : null,
    };
    this.ring.push(entry);
    if (this.ring.length > this.limits.entries) {
      this.ring.shift();
      this.droppedCount++;
    }
  }

  /** Entries kept, oldest first, and how many older ones were dropped. */
  snapshot(): { entries: JournalEntry[]; dropped: number } {
    return { entries: [...this.ring], dropped: this.droppedCount };
  }
}

/** The whole text as the head when it fits in twice `n`; else its first and last `n` characters. */
function headTail(text: string, n: number): [string, string] {
  if (text.length <= 2 * n) return [detached(text), ''];
  return [detached(text.slice(0, n)), detached(text.slice(-n))];
}

/**
 * A copy of `s` that keeps nothing else alive. V8 makes a slice of a long string a view into it, so
 * a 1 KB head kept in a journal held its whole 1 MB output for as long as the lease lived (200 such
 * heads: 212 MB of heap against 4 MB copied). Slicing a concatenation flattens it into a new string
 * first, and the view is then of that small copy.
 */
function detached(s: string): string {
  return s.length === 0 ? s : `${s} `.slice(0, -1);
}

/** One ended lease's trajectory: a line of the trajectory file. */
export interface TrajectoryRecord {
  session_id: string;
  acquired_at_ms: number;
  ended_at_ms: number;
  /** `released`, or the reclaim's reason (leaseTtl.ts). */
  ended_by: string;
  entries: JournalEntry[];
  dropped: number;
}
