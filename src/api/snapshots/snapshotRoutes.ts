/**
 * The snapshots API (snapshotContract.ts): a thin router over core/snapshots/. An acquire from a
 * snapshot is the pool API's acquire (snapshotAcquire.ts).
 */
import type { Router } from '../../http/router';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendJson, sendJsonStreamed } from '../../http/httpJson';
import { served } from '../../http/contract';
import { compileCheck } from '../../http/schemaCheck';
import { clientGone, ifUndelivered } from '../../http/clientGone';
import { BadRequestError } from '../../common/errors';
import { FORK_BODY, RESTORE_BODY, SNAPSHOT_BODY, SNAPSHOT_CONTRACT } from './snapshotContract';
import type { SnapshotService } from '../../core/snapshots/snapshotService';
import { SNAPSHOT_ID_PATTERN, SNAPSHOT_ID_SHAPE } from '../../core/snapshots/snapshotIds';

const R = SNAPSHOT_CONTRACT.routes;
const snapshotCheck = compileCheck(SNAPSHOT_BODY);
const forkCheck = compileCheck(FORK_BODY);
const restoreCheck = compileCheck(RESTORE_BODY);

/** Seconds (a float) in whole ms, at least 1; undefined stays so. */
function ms(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : Math.max(1, Math.round(seconds * 1000));
}

export function snapshotRouter(snapshots: SnapshotService): Router {
  return {
    name: 'snapshots',
    errors: poolErrorFormat,
    routes: [
      served(R.snapshot, async ({ body, params, res }) => {
        const { ttl } = snapshotCheck(body === undefined ? {} : body);
        sendJson(res, 201, await snapshots.snapshot(params.sessionId, ms(ttl)));
      }),
      served(R.fork, async ({ body, params, res }) => {
        const input = forkCheck(body);
        const { snapshot, sessions } = await snapshots.fork(params.sessionId, input.n, { acquireTimeoutMs: ms(input.acquire_timeout), leaseTtlMs: ms(input.lease_ttl), signal: clientGone(res) }, ms(input.ttl));
        const answer = sessions.map((s) => ({ session_id: s.sessionId, ...(s.leaseTtlMs !== null ? { lease_ttl: s.leaseTtlMs / 1000 } : {}), container: s.containerIndex }));
        ifUndelivered(res, () => snapshots.releaseAll(sessions.map((s) => s.sessionId)));
        await sendJsonStreamed(res, 200, { snapshot, sessions: answer });
      }),
      served(R.restore, async ({ body, params, res }) => {
        const { snapshot } = restoreCheck(body);
        sendJson(res, 200, await snapshots.restore(params.sessionId, snapshot));
      }),
      served(R.list, ({ res }) => {
        sendJson(res, 200, snapshots.list());
      }),
      served(R.remove, async ({ params, res }) => {
        if (!SNAPSHOT_ID_PATTERN.test(params.snapshotId)) throw new BadRequestError(`not a snapshot id: ${JSON.stringify(params.snapshotId.slice(0, 100))} (${SNAPSHOT_ID_SHAPE})`);
        await snapshots.remove(params.snapshotId);
        sendJson(res, 200, { status: 'deleted' });
      }),
    ],
  };
}
