/**
 * The pool API's additive routes for rollout clients (docs/pool.md, For rollout clients): group acquire, lease
 * heartbeats, a lease's history and its network policy. Errors in the pool's `{"detail","code"}` format.
 */
import type { PoolRegistry } from '../../core/pool/poolRegistry';
import type { RequestIds } from '../../core/pool/requestIds';
import { sendJson, sendJsonStreamed } from '../../http/httpJson';
import { acquireResponse } from './poolRoutes';
import { clientGone, ifUndelivered } from '../../http/clientGone';
import { parseAcquire } from './poolInput';
import type { CommandLimits } from '../../core/session/sessionInput';
import { parseGroupSize, parseNetwork } from './rolloutInput';
import type { Router } from '../../http/router';
import { POOL_CONTRACT, type Alive, type GroupAcquired, type History } from './poolContract';
import { apiErrors, served } from '../../http/contract';
import type { ImagePools } from '../../core/images/imagePools';
import { acquireGroupByImage } from './imageAcquire';
import type { GroupAcquireRequest } from '../../core/pool/poolTypes';
import type { SnapshotService } from '../../core/snapshots/snapshotService';
import { snapshotAcquireGroup } from '../snapshots/snapshotAcquire';
import { NotSupportedError } from '../../common/errors';
import type { NetworkSet } from './networkContract';

const R = POOL_CONTRACT.routes;

/** A group comes from the pool it names, as an acquire does (or the pool of the image it names); a heartbeat or history reaches the pool that leased the id. */
export function rolloutRouter(pools: PoolRegistry, limits: CommandLimits, requestIds: RequestIds, images: ImagePools | null = null, snapshots: SnapshotService | null = null): Router {
  return {
    name: 'rollout',
    ...apiErrors(POOL_CONTRACT),
    routes: [
      served(R.acquireGroup, async ({ body, res }) => {
        const input = parseAcquire(body, limits);
        const { n, spread } = parseGroupSize(body);
        if (input.image !== undefined) return acquireGroupByImage(images, { ...input, image: input.image }, { n, spread }, res, requestIds, (r) => acquireResponse(r, input, limits));
        const pool = pools.pool(input.pool);
        // A snapshot's sessions start from it, in its pool (docs/snapshots.md).
        const acquireGroup = snapshotAcquireGroup(snapshots, input) ?? ((r: GroupAcquireRequest) => pool.acquireGroup(r));
        const request = { ...input, n, spread };
        const results = input.requestId
          ? await requestIds.run(`g:${input.requestId}`, input.fingerprint(), 'acquire_group', () => acquireGroup(request))
          : await acquireGroup({ ...request, signal: clientGone(res) });
        if (!input.requestId) ifUndelivered(res, () => results.forEach((r) => pools.owning(r.sessionId).release(r.sessionId)));
        const answer: GroupAcquired = { sessions: results.map((r) => ({ ...acquireResponse(r, input, limits), container: r.containerIndex })) };
        await sendJsonStreamed(res, 200, answer);
      }),
      served(R.heartbeat, ({ params, res }) => {
        const ttlMs = pools.owning(params.sessionId).heartbeat(params.sessionId);
        const answer: Alive = { status: 'alive', lease_ttl: ttlMs === null ? null : ttlMs / 1000 };
        sendJson(res, 200, answer);
      }),
      served(R.network, async ({ body, params, res }) => {
        const { policy, egress } = parseNetwork(body);
        const site = pools.owning(params.sessionId).site(params.sessionId);
        if (!site.backend.networks) throw new NotSupportedError(`the ${site.backend.kind} backend gives sessions no networks of their own`);
        await site.backend.networks.change(site.container, site.slotId, policy, egress);
        const answer: NetworkSet = { session_id: params.sessionId, policy, egress };
        sendJson(res, 200, answer);
      }),
      served(R.history, async ({ params, res }) => {
        const { entries, dropped } = pools.owning(params.sessionId).history(params.sessionId);
        const answer: History = { session_id: params.sessionId, entries, dropped };
        await sendJsonStreamed(res, 200, answer);
      }),
    ],
  };
}
