/**
 * What the lifecycle API answers, in OpenSandbox's shapes (its Sandbox,
 * CreateSandboxResponse, ListSandboxesResponse, Snapshot, ListSnapshotsResponse). Dates are ISO 8601 strings in UTC, which
 * the SDK parses with `new Date`.
 */
import type { SandboxRecord } from '../../core/lifecycle/sandboxRecord';
import type { SnapshotRecord } from '../../core/snapshots/snapshotBook';

/** The full Sandbox (GET); `created`: the CreateSandboxResponse, which leaves out its source (image or snapshotId). */
export function sandboxView(record: SandboxRecord, created = false): Record<string, unknown> {
  const view: Record<string, unknown> = {
    id: record.id,
    status: { state: record.state, reason: record.reason, message: record.message, lastTransitionAt: record.lastTransitionAt.toISOString() },
    metadata: record.spec.metadata,
    entrypoint: record.spec.entrypoint,
    createdAt: record.createdAt.toISOString(),
  };
  if (record.expiresAt) view.expiresAt = record.expiresAt.toISOString();
  if (!created && record.spec.snapshotId !== undefined) view.snapshotId = record.spec.snapshotId;
  else if (!created) view.image = { uri: record.spec.image };
  return view;
}

/** A snapshot exists once taken and until deleted: it is Ready all its life (its creation and deletion end before their answers). */
export function snapshotView(record: SnapshotRecord): Record<string, unknown> {
  const createdAt = new Date(record.createdAtMs).toISOString();
  return {
    id: record.id,
    // A pool lease's snapshot: the lease is the sandbox (its execd answers at its session id).
    sandboxId: record.sandbox?.id ?? record.parentSession,
    ...(record.name !== null ? { name: record.name } : {}),
    status: { state: 'Ready', reason: 'snapshot_ready', message: 'snapshot is ready', lastTransitionAt: createdAt },
    createdAt,
  };
}

export function listView(items: readonly SandboxRecord[], totalItems: number, page: number, pageSize: number): Record<string, unknown> {
  return pagedList(items.map((r) => sandboxView(r)), totalItems, page, pageSize);
}

/** A ListSandboxesResponse of one page's views (a gateway merges its nodes' lists into one). */
export function pagedList(views: readonly unknown[], totalItems: number, page: number, pageSize: number): Record<string, unknown> {
  const totalPages = Math.ceil(totalItems / pageSize);
  return { items: views, pagination: { page, pageSize, totalItems, totalPages, hasNextPage: page < totalPages } };
}
