/**
 * The pool API of spec 003: acquire, execute, release. A thin router: validate, call the pool, shape.
 *
 * Served on plain node:http rather than through express: these three routes are the hot path, and
 * express's router and response helpers cost 100-200 us of CPU per request here against ~20 us for
 * node:http (bench/README.md). Express still serves /health, /metrics and the 404s.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionPool } from '../core/pool';
import type { ExecResult } from '../core/bashSession';
import { BadRequestError, ShuttingDownError } from '../common/errors';
import { parseAcquire, parseExecute, type CommandLimits } from './validation';
import { readJsonBody } from './body';
import { sendError, sendJson, sendJsonStreamed } from './httpJson';
import { UnauthorizedError } from './auth';

/** Python's str(float): 5 -> "5.0", 2.5 -> "2.5", 1e-05, as the spec writes "timed out after 5.0 seconds". */
export function pythonFloat(value: number): string {
  const [digits, exp] = value.toExponential().split('e'); // shortest round-trip digits, like Python's repr
  const e = Number(exp);
  if (e < -4 || e >= 16) return `${digits}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  return Number.isInteger(value) ? value.toFixed(1) : String(value);
}

export function executeResponse(result: ExecResult, timeoutSeconds: number): Record<string, unknown> {
  let stderr = result.stderr;
  if (result.timedOut) {
    if (stderr && !stderr.endsWith('\n')) stderr += '\n';
    stderr += `Command timed out after ${pythonFloat(timeoutSeconds)} seconds`;
  }
  const body: Record<string, unknown> = {
    status: result.returnCode === 0 ? 'Success' : 'Failed',
    stdout: result.stdout,
    stderr,
    return_code: result.returnCode,
  };
  if (result.truncated) body.truncated = true;
  return body;
}

/** Aborts when the client goes away before we answered (a waiting acquire then leaves the queue). */
function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

export interface PoolRouteOptions {
  limits: CommandLimits;
  maxBodyBytes: number;
  /** Checks the access token; null when the broker runs without one. */
  authorized: ((req: IncomingMessage) => boolean) | null;
}

/** POST /session/acquire, /session/<id>/execute, /session/<id>/release (a trailing slash or query allowed). */
const ROUTE = /^\/session\/(?:(acquire)|([^/?#]+)\/(execute|release))\/?(?:\?.*)?$/;

type Handler = (req: IncomingMessage, res: ServerResponse) => boolean;

/** Returns a handler that serves the pool routes and answers false for any other request. */
export function poolRoutes(pool: SessionPool, options: PoolRouteOptions): Handler {
  const { limits } = options;

  async function acquire(body: unknown, res: ServerResponse): Promise<void> {
    const input = parseAcquire(body, limits);
    const result = await pool.acquire({ files: input.files, startupCommands: input.startupCommands, signal: clientGone(res) });
    const out: Record<string, unknown> = { session_id: result.sessionId };
    if (input.startupCommands.length > 0) {
      out.startup_results = result.startupResults.map((r) => executeResponse(r, limits.defaultTimeoutSeconds));
    }
    await sendJsonStreamed(res, 200, out);
  }

  async function execute(id: string, body: unknown, res: ServerResponse): Promise<void> {
    const input = parseExecute(body, limits);
    if (pool.isClosing) throw new ShuttingDownError();
    const result = await pool.execute(id, { command: input.command, timeoutMs: Math.round(input.timeoutSeconds * 1000) });
    await sendJsonStreamed(res, 200, executeResponse(result, input.timeoutSeconds));
  }

  async function serve(req: IncomingMessage, res: ServerResponse, m: RegExpExecArray): Promise<void> {
    // Auth before the body is read: an unauthenticated client cannot make us buffer 64 MiB.
    if (options.authorized && !options.authorized(req)) throw new UnauthorizedError();
    const body = await readJsonBody(req, options.maxBodyBytes);
    if (m[1]) return acquire(body, res);
    const id = decodeId(m[2]);
    if (m[3] === 'execute') return execute(id, body, res);
    pool.release(id);
    sendJson(res, 200, { status: 'released' });
  }

  return (req, res) => {
    if (req.method !== 'POST') return false;
    const m = ROUTE.exec(req.url ?? '');
    if (!m) return false;
    serve(req, res, m).catch((err) => sendError(res, err, req.url ?? ''));
    return true;
  };
}

function decodeId(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new BadRequestError(`session id '${raw}' is not valid percent-encoding`);
  }
}
