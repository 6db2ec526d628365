/**
 * An acquire (or acquire_group) that names a snapshot (`{"snapshot": id}`): its sessions start from
 * it, in its pool (core/snapshots/snapshotService.ts). The pool API's routes call these in place of
 * the pool's own acquire, so retries by request_id, the queue and the answer are the same.
 */
import type { AcquireRequest, AcquireResult, GroupAcquireRequest } from '../../core/pool/poolTypes';
import type { SnapshotService } from '../../core/snapshots/snapshotService';
import { SnapshotsUnsupportedError } from '../../core/snapshots/snapshotErrors';
import type { AcquireInput } from '../pool/poolInput';

/** The acquire that starts from the snapshot `input` names; null when it names none. */
export function snapshotAcquire(snapshots: SnapshotService | null, input: AcquireInput): ((request: AcquireRequest) => Promise<AcquireResult>) | null {
  const id = input.snapshot;
  if (id === undefined) return null;
  const service = served(snapshots);
  return (request) => service.acquire(id, { acquireTimeoutMs: request.acquireTimeoutMs, leaseTtlMs: request.leaseTtlMs, pool: input.pool, signal: request.signal });
}

/** The group acquire that starts `n` sessions from the snapshot `input` names; null when it names none. */
export function snapshotAcquireGroup(snapshots: SnapshotService | null, input: AcquireInput): ((request: GroupAcquireRequest) => Promise<AcquireResult[]>) | null {
  const id = input.snapshot;
  if (id === undefined) return null;
  const service = served(snapshots);
  return (request) => service.acquireMany(id, request.n, { acquireTimeoutMs: request.acquireTimeoutMs, leaseTtlMs: request.leaseTtlMs, pool: input.pool, signal: request.signal });
}

function served(snapshots: SnapshotService | null): SnapshotService {
  if (!snapshots) throw new SnapshotsUnsupportedError('this broker serves no snapshots');
  return snapshots;
}
