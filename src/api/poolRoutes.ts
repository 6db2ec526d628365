/** The pool API of spec 003: acquire, execute, release. A thin router: validate, call the pool, shape. */
import { Router, type Request, type Response } from 'express';
import type { SessionPool } from '../core/pool';
import type { ExecResult } from '../core/bashSession';
import { ShuttingDownError } from '../common/errors';
import { parseAcquire, parseExecute, type CommandLimits } from './validation';

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
function clientGone(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

export function poolRouter(pool: SessionPool, limits: CommandLimits): Router {
  const router = Router();

  router.post('/session/acquire', async (req: Request, res: Response) => {
    const input = parseAcquire(req.body, limits);
    const result = await pool.acquire({ files: input.files, startupCommands: input.startupCommands, signal: clientGone(res) });
    const body: Record<string, unknown> = { session_id: result.sessionId };
    if (input.startupCommands.length > 0) {
      body.startup_results = result.startupResults.map((r) => executeResponse(r, limits.defaultTimeoutSeconds));
    }
    res.json(body);
  });

  router.post('/session/:id/execute', async (req: Request, res: Response) => {
    const input = parseExecute(req.body, limits);
    if (pool.isClosing) throw new ShuttingDownError();
    const result = await pool.execute(String(req.params.id), {
      command: input.command,
      timeoutMs: Math.round(input.timeoutSeconds * 1000),
    });
    res.json(executeResponse(result, input.timeoutSeconds));
  });

  router.post('/session/:id/release', (req: Request, res: Response) => {
    pool.release(String(req.params.id));
    res.json({ status: 'released' });
  });

  return router;
}
