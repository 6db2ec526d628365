/**
 * Validation of the pool API's request bodies. Everything is checked before the pool is touched, so a
 * rejected request holds no session and writes nothing.
 */
import { BadRequestError } from '../../common/errors';
import type { WorkdirFile } from '../../core/ports/backend';
import { checkCommand, describe, parseStartupCommands, parseWorkdirFiles, type CommandLimits } from '../../core/session/sessionInput';
import { acquireFingerprint, parseAcquireExtras, parseFactsFlag, parseFlag, parseRequestId, type AcquireExtras } from './rolloutInput';

export interface ExecuteInput {
  command: string;
  timeoutSeconds: number;
  /** Additive (rolloutInput.ts): a retry with the same id gets this execute's answer. */
  requestId: string | null;
  /** Additive: the answer carries the termination facts (null: the server's default, BROKER_EXECUTE_FACTS). */
  facts: boolean | null;
  /** Additive: the lease is released once the command ran, as a release call right after it would. */
  release: boolean;
}

export interface AcquireInput extends AcquireExtras {
  files: WorkdirFile[];
  startupCommands: string[];
  /** A named pool of BROKER_POOLS; undefined: the default pool. */
  pool?: string;
  /** What the request asked for, for its request_id's conflict check. */
  fingerprint(): string;
}

function bodyObject(body: unknown, optional: boolean): Record<string, unknown> {
  if (body === undefined && optional) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new BadRequestError(`Request body must be a JSON object${optional ? ' (or empty)' : ''}, got ${describe(body)}`);
  }
  return body as Record<string, unknown>;
}

export function parseExecute(body: unknown, limits: CommandLimits): ExecuteInput {
  const obj = bodyObject(body, false);
  if (!('command' in obj)) throw new BadRequestError("'command' is required");
  const command = checkCommand(obj.command, 'command', limits);
  let timeoutSeconds = limits.defaultTimeoutSeconds;
  if (obj.timeout !== undefined && obj.timeout !== null) {
    const t = obj.timeout;
    if (typeof t !== 'number' || !Number.isFinite(t)) throw new BadRequestError(`'timeout' must be a number of seconds, got ${describe(t)}`);
    if (t <= 0) throw new BadRequestError(`'timeout' must be positive, got ${t}`);
    if (t > limits.maxTimeoutSeconds) {
      throw new BadRequestError(`'timeout' must be at most ${limits.maxTimeoutSeconds} seconds (BROKER_MAX_COMMAND_TIMEOUT), got ${t}`);
    }
    timeoutSeconds = t;
  }
  return { command, timeoutSeconds, requestId: parseRequestId(obj.request_id), facts: parseFactsFlag(obj.facts), release: parseFlag(obj.release, 'release') === true };
}

export function parseAcquire(body: unknown, limits: CommandLimits): AcquireInput {
  const obj = bodyObject(body, true);
  const input: AcquireInput = {
    files: parseWorkdirFiles(obj.files),
    startupCommands: parseStartupCommands(obj.startup_commands, limits),
    ...parseAcquireExtras(obj),
    fingerprint: () => acquireFingerprint(obj),
  };
  if (obj.pool !== undefined && obj.pool !== null) {
    if (typeof obj.pool !== 'string' || obj.pool === '') throw new BadRequestError(`'pool' must be a pool name (a non-empty string), got ${describe(obj.pool)}`);
    input.pool = obj.pool;
  }
  return input;
}
