/**
 * Exact checks of the broker's answers. Each throws Unexpected(kind, what came) on any difference;
 * `kind` is what the report groups errors by.
 */
import type { Answer } from './http';
import { Unexpected } from './tally';

export interface ExecBody {
  status: string;
  stdout: string;
  stderr: string;
  return_code: number;
  truncated?: boolean;
}

/**
 * stderr lines a command may get from a NEIGHBOUR, not from itself: while another lease's fork burst
 * holds the container at its pids limit, bash retries its own forks and says so. Stripped before the
 * exact comparison and counted by the caller.
 */
const FORK_RETRY = /^bash: fork: retry: Resource temporarily unavailable\n/gm;

export function stripForkRetries(stderr: string): { stderr: string; retries: number } {
  let retries = 0;
  const rest = stderr.replace(FORK_RETRY, () => {
    retries++;
    return '';
  });
  return { stderr: rest, retries };
}

function show(a: Answer): string {
  const text = JSON.stringify(a.body);
  return `HTTP ${a.status} ${text.length > 300 ? `${text.slice(0, 300)}... (${text.length} chars)` : text}`;
}

/** A 200 execute answer, its body typed. */
export function execBody(a: Answer, kind: string): ExecBody {
  const b = a.body as ExecBody;
  if (a.status !== 200 || typeof b !== 'object' || typeof b.stdout !== 'string' || typeof b.stderr !== 'string') {
    throw new Unexpected(`${kind}: HTTP ${a.status}${a.body?.code ? ` ${a.body.code}` : ''}`, show(a));
  }
  return b;
}

/** Exactly this result (status derived from the return code, as the pool API does), not truncated. */
export function expectResult(a: Answer, kind: string, want: { stdout: string; stderr?: string; rc: number }): ExecBody {
  const b = execBody(a, kind);
  const status = want.rc === 0 ? 'Success' : 'Failed';
  const same = b.stdout === want.stdout && b.stderr === (want.stderr ?? '') && b.return_code === want.rc && b.status === status && !b.truncated;
  if (!same) throw new Unexpected(`${kind}: wrong output`, `want ${JSON.stringify({ ...want, status })}, got ${show(a)}`);
  return b;
}

/** An error answer with this status and code (e.g. 410 session_broken). */
export function expectError(a: Answer, kind: string, status: number, code: string, detail?: RegExp): void {
  const ok = a.status === status && a.body?.code === code && (!detail || detail.test(String(a.body?.detail)));
  if (!ok) throw new Unexpected(`${kind}: want ${status} ${code}, got HTTP ${a.status}${a.body?.code ? ` ${a.body.code}` : ''}`, show(a));
}

/** stderr of a timed-out command: only lines from `allowed`, then the broker's timeout line. */
export function expectTimedOut(a: Answer, kind: string, stdout: string, timeoutText: string, allowed: RegExp[]): ExecBody {
  const b = execBody(a, kind);
  const tail = `Command timed out after ${timeoutText} seconds`;
  const before = b.stderr.endsWith(tail) ? b.stderr.slice(0, -tail.length) : null;
  const noise = before === null ? [] : before.split('\n').slice(0, -1);
  const clean = before !== null && (before === '' || before.endsWith('\n')) && noise.every((l) => allowed.some((re) => re.test(l)));
  if (!clean || b.return_code !== -1 || b.status !== 'Failed' || b.stdout !== stdout) {
    throw new Unexpected(`${kind}: not the timeout answer`, `want stdout ${JSON.stringify(stdout)}, rc -1, stderr ending '${tail}'; got ${show(a)}`);
  }
  return b;
}
