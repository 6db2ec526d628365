/**
 * The pool API of spec 003: acquire, execute, release. A thin router: validate, call the pool, shape.
 * These are the hot routes: the seam (seam.ts) costs them a Map lookup and a regex.
 */
import type { ServerResponse } from 'node:http';
import type { PoolRegistry } from '../core/poolRegistry';
import type { ExecResult } from '../core/bashSession';
import { ShuttingDownError } from '../common/errors';
import { parseAcquire, parseExecute, type CommandLimits } from './validation';
import { sendJson, sendJsonStreamed } from './httpJson';
import { poolErrorFormat } from './errorFormats';
import type { Router } from './router';

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

/** POST /session/acquire (of the default pool, or the named one its `pool` gives), /session/<id>/execute, /session/<id>/release. */
export function poolRouter(pools: PoolRegistry, limits: CommandLimits): Router {
  return {
    name: 'pool',
    errors: poolErrorFormat,
    routes: [
      {
        method: 'POST',
        path: '/session/acquire',
        body: 'json',
        async handle({ body, res }) {
          const input = parseAcquire(body, limits);
          const result = await pools.pool(input.pool).acquire({ files: input.files, startupCommands: input.startupCommands, signal: clientGone(res) });
          const out: Record<string, unknown> = { session_id: result.sessionId };
          if (input.startupCommands.length > 0) {
            out.startup_results = result.startupResults.map((r) => executeResponse(r, limits.defaultTimeoutSeconds));
          }
          await sendJsonStreamed(res, 200, out);
        },
      },
      {
        method: 'POST',
        path: '/session/:sessionId/execute',
        body: 'json',
        async handle({ body, params, res }) {
          const input = parseExecute(body, limits);
          const pool = pools.owning(params.sessionId);
          if (pool.isClosing) throw new ShuttingDownError();
          const result = await pool.execute(params.sessionId, { command: input.command, timeoutMs: Math.round(input.timeoutSeconds * 1000) });
          await sendJsonStreamed(res, 200, executeResponse(result, input.timeoutSeconds));
        },
      },
      {
        method: 'POST',
        path: '/session/:sessionId/release',
        // Any valid JSON body (or none) is taken, and ignored.
        body: 'json',
        handle({ params, res }) {
          pools.owning(params.sessionId).release(params.sessionId);
          sendJson(res, 200, { status: 'released' });
        },
      },
    ],
  };
}
