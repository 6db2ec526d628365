/**
 * The pool API's additive fields for rollout clients (docs/pool.md, For rollout clients): `request_id` on execute and
 * acquire, `facts` and `release` on execute, `lease_ttl` and `acquire_timeout` on acquire, `n` and
 * `spread` on acquire_group. Checked
 * before the pool is touched, like the pool API's own fields (poolContract.ts, poolInput.ts).
 */
import { createHash } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import { GROUP_SIZE } from './poolContract';
import { compileCheck } from '../../http/schemaCheck';
import type { EgressPolicy } from '../../core/ports/sessionNetworks';
import { NETWORK_BODY } from './networkContract';
import { BadRequestError } from '../../common/errors';
import { checkRules, type EgressRule } from '../../core/network/egressRules';

export interface AcquireExtras {
  requestId: string | null;
  leaseTtlMs: number | undefined;
  acquireTimeoutMs: number | undefined;
}

let groupSizeCheck: ((body: unknown) => Static<typeof GROUP_SIZE>) | null = null;

/** acquire_group's `n` and `spread` (poolContract.ts), once its acquire fields passed; an empty body has no `n`. */
export function parseGroupSize(body: unknown): { n: number; spread: boolean } {
  groupSizeCheck ??= compileCheck(GROUP_SIZE);
  const { n, spread } = groupSizeCheck(body ?? {});
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

let networkCheck: ((body: unknown) => Static<typeof NETWORK_BODY>) | null = null;

/** PUT /session/{id}/network's `policy` and `egress` rules, checked before the lease is looked at. */
export function parseNetwork(body: unknown): { policy: EgressPolicy; egress: EgressRule[] } {
  networkCheck ??= compileCheck(NETWORK_BODY);
  const { policy, egress = [] } = networkCheck(body);
  const checked = checkRules(egress, 'egress');
  if (typeof checked === 'string') throw new BadRequestError(checked);
  return { policy, egress: checked.map((c) => c.rule) };
}
