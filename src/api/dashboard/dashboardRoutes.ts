/**
 * The live dashboard: the page at GET /ui (public: it holds no data, like the workspace page), and
 * the operator's routes under /admin, behind the one token: the state now (GET /admin/state), the
 * same frames live over a WebSocket (/admin/live, one a second), and the actions (release or
 * reclaim a lease, replace a container). The page asks for the token once (sessionStorage, shared
 * with the workspace page) and offers it to the WebSocket as the `bearer.<token>` subprotocol.
 */
import type { WebSocket } from 'ws';
import type { PoolRegistry } from '../../core/pool/poolRegistry';
import type { DashboardFeed } from '../../core/dashboard/dashboardFeed';
import { BadRequestError, BrokerError, brokerError } from '../../common/errors';
import { sendJson, sendText } from '../../http/httpJson';
import { brokerHealth } from '../pool/healthRoutes';
import type { Router } from '../../http/router';
import { apiErrors, served, upgrade } from '../../http/contract';
import { DASHBOARD_ASSETS, dashboardPage } from './dashboardPage';
import { DASHBOARD_CONTRACT } from './dashboardContract';

const R = DASHBOARD_CONTRACT.routes;

/** A viewer that has not taken this much of earlier frames skips frames until it has (a slow phone). */
const MAX_BUFFERED_BYTES = 1 << 20;

class ContainerBusyError extends brokerError('busy', 'container_replacing', (index: number) => `container ${index} is being replaced already`) {}

function containerIndex(raw: string): number {
  if (!/^\d{1,6}$/.test(raw)) throw new BadRequestError(`container index '${raw}' must be a whole number >= 0`);
  return Number(raw);
}

export function dashboardRouter(pools: PoolRegistry, feed: DashboardFeed): Router {
  // /health's verdict beside the frame: the page shows the same word /health answers.
  const withStatus = (frame: object): object => ({ status: brokerHealth(pools).status, ...frame });
  // One JSON text per frame, however many viewers.
  const texts = new WeakMap<object, string>();
  const text = (frame: object): string => {
    let t = texts.get(frame);
    if (t === undefined) texts.set(frame, (t = JSON.stringify({ type: 'frame', frame: withStatus(frame) })));
    return t;
  };
  const watch = (ws: WebSocket): void => {
    const stop = feed.subscribe((frame) => {
      if (ws.readyState === ws.OPEN && ws.bufferedAmount < MAX_BUFFERED_BYTES) ws.send(text(frame));
    });
    ws.on('close', stop);
    ws.on('error', stop);
    ws.on('message', () => undefined); // viewers only listen
  };
  const endLease = (why: 'released' | 'operator') =>
    ({ params, res }: { params: Readonly<Record<string, string>>; res: import('node:http').ServerResponse }) => {
      pools.owning(params.sessionId).endLease(params.sessionId, why);
      sendJson(res, 200, { session_id: params.sessionId, status: why === 'released' ? 'released' : 'reclaimed' });
    };
  return {
    name: 'dashboard',
    ...apiErrors(DASHBOARD_CONTRACT),
    routes: [
      served(R.page, ({ res }) => sendText(res, 'text/html; charset=utf-8', dashboardPage())),
      served(R.asset, ({ params, res }) => {
        // Own names only: `constructor` or `__proto__` would find the object's prototype's.
        const asset = Object.hasOwn(DASHBOARD_ASSETS, params.asset) ? DASHBOARD_ASSETS[params.asset] : undefined;
        if (!asset) throw new BrokerError('not_found', 'asset_not_found', `no dashboard asset '${params.asset}'`);
        sendText(res, asset.type, asset.body);
      }),
      served(R.state, ({ res }) => sendJson(res, 200, withStatus(feed.frame()))),
      served(R.release, endLease('released')),
      served(R.reclaim, endLease('operator')),
      served(R.replace, ({ params, query, res }) => {
        const index = containerIndex(params.index);
        const name = new URLSearchParams(query).get('pool') ?? undefined; // none: the default pool
        if (!pools.pool(name).replaceContainer(index)) throw new ContainerBusyError(index);
        sendJson(res, 202, { container: index, pool: name ?? pools.main.name, status: 'replacing' });
      }),
    ],
    upgrades: [upgrade(R.live, { accept: watch })],
  };
}
