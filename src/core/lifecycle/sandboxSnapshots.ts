/**
 * A lifecycle sandbox's snapshots (docs/lifecycle.md, docs/snapshots.md): a sandbox's snapshot is its
 * session's, in the node's one snapshot store (core/snapshots/), and a sandbox restored from a
 * snapshot is a slot of the snapshot's pool taken out and started from it. Only a sandbox that is an
 * isolated session of a shared container has a view of its own to freeze: a whole container's
 * (a pool of whole containers) and a dedicated container's file routes and shells work on the
 * container itself, which no session layer holds, so theirs are refused with 501 saying so.
 */
import type { PoolEntry } from '../pool/poolRegistry';
import type { TakenSlot } from '../pool/poolTypes';
import type { SnapshotService } from '../snapshots/snapshotService';
import type { SnapshotRecord } from '../snapshots/snapshotBook';
import { SnapshotNotFoundError, SnapshotWhileRunningError } from '../snapshots/snapshotErrors';
import { BadRequestError, NotImplementedError } from '../../common/errors';
import { SandboxStateError, type PooledPlace, type SandboxRecord, type SandboxSpec } from './sandboxRecord';

const WHY = 'snapshots are served for a sandbox that is an isolated session of a shared container (an image of a configured pool, created without resourceLimits, where the node serves images: docs/lifecycle.md)';

/** Entry processes a session of a pool may be asked for: it runs none, it idles. */
export const IDLE_ENTRYPOINTS = ['tail -f /dev/null', 'sleep infinity'];

/** A pool of whole containers: each sandbox is a container of its own, whose files no session layer holds. */
function wholeContainers(entry: PoolEntry): boolean {
  return entry.freshContainer && entry.sessionsPerContainer === 1;
}

export function servedSnapshots(snapshots: SnapshotService | null | undefined): SnapshotService {
  if (!snapshots?.served) throw new NotImplementedError('snapshots are not served by this broker: they need per-lease isolation on the docker backend (docs/snapshots.md)');
  return snapshots;
}

/** Where a snapshot of the sandbox is taken: its lease, when it is a running isolated session (409 not running, 501 no session of its own). */
function snapshotPlace(record: SandboxRecord): PooledPlace {
  if (record.state !== 'Running' || record.busy) throw new SandboxStateError(record, 'snapshot it (a snapshot is taken of a Running sandbox)');
  const { place } = record;
  if (place.kind === 'dedicated') throw new NotImplementedError(`Sandbox ${record.id} is a container of its own (an image no pool serves, or a create with resourceLimits): it has no session view to snapshot; ${WHY}`);
  if (wholeContainers(place.entry)) throw new NotImplementedError(`Sandbox ${record.id} is a whole container of pool '${place.entry.name}': its files and shells work on the container itself, which no session layer holds; ${WHY}`);
  return place;
}

/**
 * The sandbox's snapshot: its session's view and its lease shell's state. While it is taken the
 * sandbox is `busy` (its execd answers 409), and a command running in its lease shell refuses it
 * (409), as a pool lease's does.
 */
export async function snapshotSandbox(snapshots: SnapshotService, record: SandboxRecord, name: string | null): Promise<SnapshotRecord> {
  const place = snapshotPlace(record);
  if (place.taken.shell()?.busy) throw new SnapshotWhileRunningError(record.id);
  record.busy = true;
  try {
    const view = await snapshots.snapshot(place.taken.sessionId, undefined, { name, sandbox: { id: record.id, env: { ...record.spec.env } } });
    return snapshots.record(view.snapshot_id);
  } finally {
    record.busy = false;
  }
}

/** The create's checks for a restore from `snapshotId`: its pool must be able to serve it (404 as a 400: a create names no resource by path). */
function restorePool(snapshots: SnapshotService, snapshotId: string, spec: SandboxSpec): PoolEntry {
  let entry: PoolEntry;
  try {
    entry = snapshots.poolOf(snapshotId);
  } catch (err) {
    if (err instanceof SnapshotNotFoundError) throw new BadRequestError(`snapshotId '${snapshotId.slice(0, 100)}' names no snapshot (deleted, expired, or never taken on this node)`);
    throw err;
  }
  if (wholeContainers(entry)) throw new NotImplementedError(`snapshot ${snapshotId} is of a session of pool '${entry.name}', a pool of whole containers: ${WHY}`);
  if (!IDLE_ENTRYPOINTS.includes(spec.entrypoint.join(' '))) {
    throw new NotImplementedError(`entrypoint ${JSON.stringify(spec.entrypoint)}: a sandbox restored from a snapshot is a session of the snapshot's pool and runs no entry process; leave entrypoint out or give one that only idles (${IDLE_ENTRYPOINTS.join(', ')})`);
  }
  return entry;
}

/**
 * A slot of the snapshot's pool taken out and started from it, with the spec the sandbox keeps:
 * the pool's image, and the source sandbox's env beneath the create's own.
 */
export async function takeFromSnapshot(snapshots: SnapshotService, snapshotId: string, spec: SandboxSpec, signal?: AbortSignal): Promise<{ entry: PoolEntry; taken: TakenSlot; spec: SandboxSpec }> {
  const entry = restorePool(snapshots, snapshotId, spec);
  const source = snapshots.record(snapshotId).sandbox;
  const taken = await entry.pool.takeOut(signal);
  try {
    await snapshots.startTaken(snapshotId, taken.sessionId);
  } catch (err) {
    taken.giveBack();
    throw err;
  }
  return { entry, taken, spec: { ...spec, image: entry.image, env: { ...source?.env, ...spec.env } } };
}
