/**
 * The pool API's additive fields for rollout clients (docs/pool.md, For rollout clients): `request_id` on execute and
 * acquire, `facts` and `release` on execute, `lease_ttl` and `acquire_timeout` on acquire, `n` and
 * `spread` on acquire_group. Checked
 * before the pool is touched, like the spec's own fields (poolInput.ts).
 */
import { createHash } from 'node:crypto';
import { BadRequestError } from '../../common/errors';
import { MAX_GROUP_SIZE } from '../../core/pool/groupAcquire';

/** Printable, up to this long: a UUID, a trace id, an episode and step number. */
const MAX_REQUEST_ID_CHARS = 200;
// eslint-disable-next-line no-control-regex -- control characters are what is refused
const CONTROL = /[\x00-\x1f\x7f]/;

export interface AcquireExtras {
  requestId: string | null;
  leaseTtlMs: number | undefined;
  acquireTimeoutMs: number | undefined;
}

export function parseRequestId(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_REQUEST_ID_CHARS || CONTROL.test(value)) {
    throw new BadRequestError(`'request_id' must be a string of 1 to ${MAX_REQUEST_ID_CHARS} printable characters`);
  }
  return value;
}

export function parseFactsFlag(value: unknown): boolean | null {
  return parseFlag(value, 'facts');
}

/** An optional true/false field; null when absent. */
export function parseFlag(value: unknown, field: string): boolean | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'boolean') throw new BadRequestError(`'${field}' must be true or false, got ${JSON.stringify(value)}`);
  return value;
}

/** Optional positive seconds (a float, as the spec's timeout is), in ms. */
function optionalSeconds(obj: Record<string, unknown>, field: string): number | undefined {
  const v = obj[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new BadRequestError(`'${field}' must be a positive number of seconds, got ${JSON.stringify(v)}`);
  return Math.max(1, Math.round(v * 1000));
}

export function parseAcquireExtras(obj: Record<string, unknown>): AcquireExtras {
  return {
    requestId: parseRequestId(obj.request_id),
    leaseTtlMs: optionalSeconds(obj, 'lease_ttl'),
    acquireTimeoutMs: optionalSeconds(obj, 'acquire_timeout'),
  };
}

export function parseGroupSize(obj: Record<string, unknown>): { n: number; spread: boolean } {
  const { n, spread } = obj;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_GROUP_SIZE) {
    throw new BadRequestError(`'n' is required: an integer from 1 to ${MAX_GROUP_SIZE}, got ${JSON.stringify(n)}`);
  }
  if (spread !== undefined && spread !== null && typeof spread !== 'boolean') throw new BadRequestError(`'spread' must be true or false, got ${JSON.stringify(spread)}`);
  return { n, spread: spread === true };
}

/**
 * What an acquire asked for, for its request_id's conflict check: the body without request_id and
 * acquire_timeout (a retry may wait less long), hashed (a body may carry megabytes of files).
 */
export function acquireFingerprint(obj: Record<string, unknown>): string {
  const rest = Object.fromEntries(Object.entries(obj).filter(([k]) => k !== 'request_id' && k !== 'acquire_timeout'));
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex');
}
