/**
 * OpenSandbox's lifecycle API under /v1 (the API its SDKs are written against), over
 * the SandboxService: create, get, list, delete, pause, resume, renew-expiration, metadata, the
 * endpoints of a sandbox's ports, and snapshots (lifecycleSnapshotRoutes.ts). A thin router: each route served from its contract
 * (lifecycleContract.ts), its input checked (lifecycleInput.ts), the service called, the answer shaped
 * (lifecycleViews.ts). Errors take OpenSandbox's `{code, message}` envelope.
 */
import type { ServerResponse } from 'node:http';
import { SANDBOX_STATES } from '../../core/lifecycle/sandboxRecord';
import type { SandboxService } from '../../core/lifecycle/sandboxService';
import { sendJson } from '../../http/httpJson';
import type { Router } from '../../http/router';
import { clientGone } from '../../http/clientGone';
import { publicAddress } from '../../http/publicAddress';
import { createParser, parseListQuery, parseMetadataPatch, parseRenew, type TimeoutBounds } from './lifecycleInput';
import { listView, sandboxView } from './lifecycleViews';
import { unservedLifecycleRoutes } from './unservedRoutes';
import { lifecycleSnapshotRoutes } from './lifecycleSnapshotRoutes';
import type { SnapshotService } from '../../core/snapshots/snapshotService';
import { endpointFor } from './sandboxEndpoints';
import { parsePort } from './portProxy';
import { apiErrors, served } from '../../http/contract';
import { LIFECYCLE_CONTRACT } from './lifecycleContract';

const R = LIFECYCLE_CONTRACT.routes;

export interface LifecycleLimits extends TimeoutBounds {
  maxTimeoutMs: number;
}

/** An accepted state change: 202 with no body (Content-Length 0, which the SDK reads as no data). */
function accepted(res: ServerResponse): void {
  res.writeHead(202, { 'Content-Length': '0' }).end();
}

/** `snapshots`: the node's snapshot store (null: every snapshot route answers 501). */
export function lifecycleRouter(sandboxes: SandboxService, limits: LifecycleLimits, snapshots: SnapshotService | null = null): Router {
  const parseCreate = createParser(limits);
  return {
    name: 'lifecycle',
    ...apiErrors(LIFECYCLE_CONTRACT),
    routes: [
      served(R.create, async ({ body, res }) => {
        const { poolRef, ...spec } = parseCreate(body);
        const record = await sandboxes.create(spec, poolRef, clientGone(res));
        if (res.destroyed) return void (await sandboxes.delete(record.id)); // nobody will learn its id
        sendJson(res, 202, sandboxView(record, true), { Location: `/v1/sandboxes/${record.id}` });
      }),
      served(R.list, ({ query, res }) => {
        const filter = parseListQuery(query, SANDBOX_STATES);
        const { items, totalItems } = sandboxes.list(filter);
        sendJson(res, 200, listView(items, totalItems, filter.page, filter.pageSize));
      }),
      served(R.get, ({ params, res }) => {
        sendJson(res, 200, sandboxView(sandboxes.get(params.id)));
      }),
      served(R.delete, async ({ params, res }) => {
        await sandboxes.delete(params.id);
        res.writeHead(204).end();
      }),
      served(R.patchMetadata, ({ params, body, res }) => {
        sendJson(res, 200, sandboxView(sandboxes.patchMetadata(params.id, parseMetadataPatch(body))));
      }),
      served(R.pause, async ({ params, res }) => {
        await sandboxes.pause(params.id);
        accepted(res);
      }),
      served(R.resume, async ({ params, res }) => {
        await sandboxes.resume(params.id);
        accepted(res);
      }),
      served(R.renew, ({ params, body, res }) => {
        const expiresAt = sandboxes.renew(params.id, parseRenew(body), limits.maxTimeoutMs);
        sendJson(res, 200, { expiresAt: expiresAt.toISOString() });
      }),
      served(R.endpoint, async ({ params, query, req, res }) => {
        const port = parsePort(params.port);
        sendJson(res, 200, await endpointFor(sandboxes, sandboxes.get(params.id), port, new URLSearchParams(query), publicAddress(req)));
      }),
      ...lifecycleSnapshotRoutes(sandboxes, snapshots),
      ...unservedLifecycleRoutes(),
    ],
  };
}
