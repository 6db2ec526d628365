/**
 * The pool API: acquire, execute, release. A thin router: validate, call the pool, shape.
 * Each route's body and answer are declared once, in poolContract.ts.
 * These are the hot routes: the seam (seam.ts) costs them a Map lookup and a regex.
 */
import type { PoolRegistry } from '../../core/pool/poolRegistry';
import type { ExecResult } from '../../core/session/bashSession';
import { SessionBrokenError, ShuttingDownError } from '../../common/errors';
import { parseAcquire, parseExecute, type AcquireInput } from './poolInput';
import type { CommandLimits } from '../../core/session/sessionInput';
import type { RequestIds } from '../../core/pool/requestIds';
import type { AcquireRequest, AcquireResult } from '../../core/pool/poolTypes';
import type { SnapshotService } from '../../core/snapshots/snapshotService';
import { snapshotAcquire } from '../snapshots/snapshotAcquire';
import { sendJson, sendJsonStreamed } from '../../http/httpJson';
import type { Router } from '../../http/router';
import { clientGone, ifUndelivered } from '../../http/clientGone';
import { POOL_CONTRACT, type Acquired, type ExecuteResult, type Released } from './poolContract';
import { apiErrors, served } from '../../http/contract';
import type { ImagePools } from '../../core/images/imagePools';
import { acquireByImage } from './imageAcquire';

const R = POOL_CONTRACT.routes;

/** Python's str(float): 5 -> "5.0", 2.5 -> "2.5", 1e-05, as the pool API writes "timed out after 5.0 seconds". */
export function pythonFloat(value: number): string {
  const [digits, exp] = value.toExponential().split('e'); // shortest round-trip digits, like Python's repr
  const e = Number(exp);
  if (e < -4 || e >= 16) return `${digits}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  return Number.isInteger(value) ? value.toFixed(1) : String(value);
}

/**
 * The pool API's four fields (and `truncated: true` when output was cut), then, when asked for, the
 * termination facts: null where the kernel could not tell (commandFacts.ts), never a guessed 0.
 * Without them the answer is exactly the pool API's four fields, which its clients compare whole.
 */
export function executeResponse(result: ExecResult, timeoutSeconds: number, withFacts = false): ExecuteResult {
  let stderr = result.stderr;
  if (result.timedOut) {
    if (stderr && !stderr.endsWith('\n')) stderr += '\n';
    stderr += `Command timed out after ${pythonFloat(timeoutSeconds)} seconds`;
  }
  const body: ExecuteResult = {
    status: result.returnCode === 0 ? 'Success' : 'Failed',
    stdout: result.stdout,
    stderr,
    return_code: result.returnCode,
  };
  if (!withFacts) {
    if (result.truncated) body.truncated = true;
    return body;
  }
  const { facts } = result;
  return {
    ...body,
    timed_out: result.timedOut,
    interrupted: facts.interrupted,
    signal: facts.signal,
    oom_killed: facts.oomKilled,
    duration_ms: facts.durationMs,
    cpu_ms: facts.cpuMs,
    max_rss_kb: facts.maxRssKb,
    // Only for a session with a private disk (per-lease isolation): other answers keep their fields.
    ...(facts.diskFull !== undefined ? { disk_full: facts.diskFull } : {}),
    ...(facts.egressRefused !== undefined ? { egress_refused: facts.egressRefused } : {}),
    ...(facts.egressRefusedTo !== undefined ? { egress_refused_to: facts.egressRefusedTo } : {}),
    truncated: result.truncated,
    truncated_bytes: facts.droppedBytes,
  };
}

/** `{session_id}`, the startup results when there were startup commands, the lease_ttl granted when one was asked. */
export function acquireResponse(result: AcquireResult, input: Pick<AcquireInput, 'startupCommands'>, limits: CommandLimits): Acquired {
  const out: Acquired = { session_id: result.sessionId };
  if (input.startupCommands.length > 0) out.startup_results = result.startupResults.map((r) => executeResponse(r, limits.defaultTimeoutSeconds));
  if (result.leaseTtlMs !== null) out.lease_ttl = result.leaseTtlMs / 1000;
  return out;
}

/**
 * An execute with `"release": true`: the lease is released once the command ran, before the answer
 * is sent, so the episode's last round trip is also its release (one request fewer). Also after a
 * 410 (the command may have run; the lease is over either way). Not when the execute was refused
 * before it ran (400, 404, 409, 503): a refused request changes nothing.
 */
async function releasingAfter(execute: () => Promise<ExecResult>, release: () => void): Promise<ExecResult> {
  try {
    const result = await execute();
    release();
    return result;
  } catch (err) {
    if (err instanceof SessionBrokenError) release();
    throw err;
  }
}

/**
 * POST /session/acquire (of the default pool, or the named one its `pool` gives), /session/<id>/execute,
 * /session/<id>/release (routed to the pool that leased the id). `requestIds`: the window of
 * retry-safe calls (core/pool/requestIds.ts) that `request_id` names. An acquire that names an
 * `image` goes to `images` (imageAcquire.ts).
 */
export function poolRouter(pools: PoolRegistry, limits: CommandLimits, requestIds: RequestIds, factsByDefault = false, images: ImagePools | null = null, snapshots: SnapshotService | null = null): Router {
  return {
    name: 'pool',
    ...apiErrors(POOL_CONTRACT),
    routes: [
      served(R.acquire, async ({ body, res }) => {
        const input = parseAcquire(body, limits);
        if (input.image !== undefined) return acquireByImage(images, { ...input, image: input.image }, res, requestIds, (r) => acquireResponse(r, input, limits));
        const pool = pools.pool(input.pool);
        // A snapshot's sessions start from it, in its pool (docs/snapshots.md).
        const acquire = snapshotAcquire(snapshots, input) ?? ((r: AcquireRequest) => pool.acquire(r));
        const request = { ...input, leaseTtlMs: input.leaseTtlMs, acquireTimeoutMs: input.acquireTimeoutMs };
        // With a request_id the acquire outlives its client: the retry that comes for it gets its lease.
        const result = input.requestId
          ? await requestIds.run(`a:${input.requestId}`, input.fingerprint(), 'acquire', () => acquire(request))
          : await acquire({ ...request, signal: clientGone(res) });
        // With a request_id the lease waits for its retry; without, a client gone takes nobody's lease.
        if (!input.requestId) ifUndelivered(res, () => pools.owning(result.sessionId).release(result.sessionId));
        await sendJsonStreamed(res, 200, acquireResponse(result, input, limits));
      }),
      served(R.execute, async ({ body, params, res }) => {
        const input = parseExecute(body, limits);
        const { sessionId } = params;
        const pool = pools.owning(sessionId);
        if (pool.isClosing) throw new ShuttingDownError();
        const { command, requestId, release } = input;
        const facts = input.facts ?? factsByDefault;
        const timeoutMs = Math.round(input.timeoutSeconds * 1000);
        const execute = (): Promise<ExecResult> => pool.execute(sessionId, { command, timeoutMs, facts, requestId: requestId ?? undefined });
        const run = release ? () => releasingAfter(execute, () => pool.release(sessionId)) : execute;
        const result = requestId
          ? await requestIds.run(`x:${sessionId}:${requestId}`, `${input.timeoutSeconds}\0${command}${release ? '\0release' : ''}`, 'command', run)
          : await run();
        const answer = executeResponse(result, input.timeoutSeconds, facts);
        if (release) answer.released = true;
        await sendJsonStreamed(res, 200, answer);
      }),
      // Any valid JSON body (or none) is taken, and ignored.
      served(R.release, ({ params, res }) => {
        pools.owning(params.sessionId).release(params.sessionId);
        const answer: Released = { status: 'released' };
        sendJson(res, 200, answer);
      }),
    ],
  };
}
