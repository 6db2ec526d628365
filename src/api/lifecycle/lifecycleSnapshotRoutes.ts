/**
 * OpenSandbox's snapshot routes (lifecycleSnapshotContract.ts): thin routes over the node's one
 * snapshot store (core/snapshots/), the pool API's too. A sandbox's snapshot is taken by the
 * SandboxService (its session's: core/lifecycle/sandboxSnapshots.ts); list, get and delete act on
 * the store. Where the node keeps no session layers (the local backend, isolation off) each answers
 * 501, as a snapshot of a session does.
 */
import type { SandboxService } from '../../core/lifecycle/sandboxService';
import type { SnapshotService } from '../../core/snapshots/snapshotService';
import { SnapshotNotFoundError } from '../../core/snapshots/snapshotErrors';
import { SNAPSHOT_ID_PATTERN } from '../../core/snapshots/snapshotIds';
import { servedSnapshots } from '../../core/lifecycle/sandboxSnapshots';
import type { Route } from '../../http/router';
import { sendJson } from '../../http/httpJson';
import { served } from '../../http/contract';
import { compileCheck } from '../../http/schemaCheck';
import { LIFECYCLE_SNAPSHOT_ROUTES as R, CREATE_SNAPSHOT_BODY, SNAPSHOT_STATES } from './lifecycleSnapshotContract';
import { parseSnapshotListQuery } from './lifecycleInput';
import { pagedList, snapshotView } from './lifecycleViews';

const createCheck = compileCheck(CREATE_SNAPSHOT_BODY);

/** The snapshot's id as the store makes them; any other string names no snapshot (404 first, on any backend; never a lookup of a huge key). */
function snapshotId(raw: string): string {
  if (!SNAPSHOT_ID_PATTERN.test(raw)) throw new SnapshotNotFoundError(raw.slice(0, 100));
  return raw;
}

export function lifecycleSnapshotRoutes(sandboxes: SandboxService, store: SnapshotService | null): Route[] {
  return [
    served(R.createSnapshot, async ({ body, params, res }) => {
      const { name } = createCheck(body === undefined ? {} : body);
      const record = await sandboxes.snapshot(params.id, name ?? null);
      sendJson(res, 202, snapshotView(record), { Location: `/v1/snapshots/${record.id}` });
    }),
    served(R.listSnapshots, ({ query, res }) => {
      const filter = parseSnapshotListQuery(query, SNAPSHOT_STATES);
      const views = servedSnapshots(store)
        .records()
        .map(snapshotView)
        .filter((v) => (filter.sandboxId === null || v.sandboxId === filter.sandboxId) && (filter.name === null || v.name === filter.name))
        .filter((v) => filter.states.length === 0 || filter.states.includes((v.status as { state: string }).state));
      const start = (filter.page - 1) * filter.pageSize;
      sendJson(res, 200, pagedList(views.slice(start, start + filter.pageSize), views.length, filter.page, filter.pageSize));
    }),
    served(R.getSnapshot, ({ params, res }) => {
      const id = snapshotId(params.snapshotId);
      sendJson(res, 200, snapshotView(servedSnapshots(store).record(id)));
    }),
    served(R.deleteSnapshot, async ({ params, res }) => {
      const id = snapshotId(params.snapshotId);
      await servedSnapshots(store).remove(id);
      res.writeHead(204).end();
    }),
  ];
}
