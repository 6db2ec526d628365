/**
 * Where a gateway sends each call, declared once for every API: a table of route patterns, each with
 * where its node comes from. Routes with an `:id` go to the node the id names (ids are
 * `<node>.<incarnation>.<random>`: clusterIds.ts), read from the path alone, with no store lookup.
 * Matching is the broker's own route table (http/routeTable.ts): one Map lookup and a few regexes.
 *
 * - `id`: the node the path's `:id` names (an id no node minted goes to any node, which answers 404).
 * - `acquire`: placed by gatewayAcquire.ts (the pool API's acquires).
 * - `create`: a new workspace, lifecycle sandbox or task: placed on a node with capacity (placement.ts).
 * - `list`: every node, the answers merged (gatewayLists.ts).
 * - `home`: the home node (the registered node whose id sorts first): what a broker holds one of and
 *   the API names no id for: the default workspace at the root paths, the sandbox group of the group
 *   API, and the dashboard's /admin routes (its state and live feed must come from one node).
 * - `any`: any serving node (the API document, pages: answers that are the same on every node).
 * - `gateway`: answered by the gateway itself (/health, /metrics, /cluster/targets, the cluster's /ui).
 *
 * Each route also says its API's error format, for the errors the gateway itself answers (node_lost),
 * and whether it is public (served without the client's token, as on a standalone broker).
 */
import type { ErrorFormat } from '../../http/errorFormats';
import { openSandboxErrorFormat, poolErrorFormat } from '../../http/errorFormats';
import { RouteTable } from '../../http/routeTable';
import type { Router } from '../../http/router';

export type Destination = 'id' | 'acquire' | 'create' | 'list' | 'home' | 'any' | 'gateway';

/** The lists a gateway merges, by their answer's shape. */
export type ListKind = 'workspaces' | 'lifecycle';

/** Every HTTP method a route with `methods: ALL` takes; 'WS' is a WebSocket upgrade. */
const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
type Method = (typeof HTTP_METHODS)[number] | 'WS';
const ALL: readonly Method[] = [...HTTP_METHODS, 'WS'];

export interface GatewayRoute {
  methods: readonly Method[];
  path: string;
  to: Destination;
  errors: ErrorFormat;
  list?: ListKind;
  public?: boolean;
}

/** Routes of the APIs that answer in `errors`' format. */
const routesIn =
  (errors: ErrorFormat) =>
  (methods: readonly Method[], path: string, to: Destination, extra: Partial<GatewayRoute> = {}): GatewayRoute => ({ methods, path, to, errors, ...extra });
const pool = routesIn(poolErrorFormat);
const openSandbox = routesIn(openSandboxErrorFormat);

export const GATEWAY_ROUTES: readonly GatewayRoute[] = [
  // The gateway's own.
  pool(['GET', 'HEAD'], '/health', 'gateway', { public: true }),
  pool(['GET'], '/metrics', 'gateway'),
  pool(['GET'], '/cluster/targets', 'gateway'),
  // The pool API and its rollout extras.
  pool(['POST'], '/session/acquire', 'acquire'),
  pool(['POST'], '/session/acquire_group', 'acquire'),
  pool(ALL, '/session/:id/*rest', 'id'),
  // Workspaces: named ones by id (their WebSockets too), the default one at the root paths on the home node.
  pool(['POST'], '/workspaces', 'create'),
  pool(['GET'], '/workspaces', 'list', { list: 'workspaces' }),
  pool(ALL, '/workspaces/:id/*rest', 'id'),
  pool(ALL, '/api/*rest', 'home'),
  pool(ALL, '/ws/*rest', 'home'),
  pool(ALL, '/execute-async/*rest', 'home'),
  pool(ALL, '/execute/*rest', 'home'),
  // Task sandboxes (the pool API's error format) share /sandboxes/{id} with execd, the port proxy
  // and egress (OpenSandbox's): the literal routes win over the rest parameter.
  pool(['POST'], '/sandboxes', 'create'),
  pool(['GET', 'DELETE'], '/sandboxes/:id', 'id'),
  pool(['POST'], '/sandboxes/:id/prompt', 'id'),
  pool(['POST'], '/sandboxes/:id/abort', 'id'),
  pool(['GET'], '/sandboxes/:id/stream/:name', 'id'),
  openSandbox(ALL, '/sandboxes/:id/*rest', 'id'),
  // OpenSandbox's lifecycle API.
  openSandbox(['POST'], '/v1/sandboxes', 'create'),
  openSandbox(['GET'], '/v1/sandboxes', 'list', { list: 'lifecycle' }),
  openSandbox(ALL, '/v1/sandboxes/:id/*rest', 'id'),
  // Sandbox groups: the group API names no group (one per broker), so the group lives on the home
  // node; each sandbox's Sandbox API (its sandbox_url on a node) by the group's id.
  pool(ALL, '/group/*rest', 'home'),
  pool(ALL, '/sandbox/*rest', 'home'),
  pool(ALL, '/groups/:id/*rest', 'id'),
  // The dashboard: the cluster's page is the gateway's own; its /admin routes the home node's, an
  // operator's lease actions by the session's id.
  pool(['GET'], '/ui', 'gateway', { public: true }),
  pool(['GET'], '/ui/dashboard/:asset', 'gateway', { public: true }),
  pool(['GET'], '/admin/state', 'home'),
  pool(['WS'], '/admin/live', 'home'),
  pool(['POST'], '/admin/containers/:index/replace', 'home'),
  pool(['POST'], '/admin/leases/:id/:action', 'id'),
  // Pages the same on every node (the workspace page's script calls the routes above).
  pool(['GET'], '/ui/*rest', 'any', { public: true }),
  pool(['GET'], '/docs', 'any', { public: true }),
  pool(['GET'], '/docs/*rest', 'any', { public: true }),
  pool(['GET'], '/openapi.json', 'any', { public: true }),
];

export interface RouteMatch {
  route: GatewayRoute;
  /** The id the route's `:id` took, percent-decoded; null when the route has none. */
  id: string | null;
}

/** The table, compiled: one bucket per method (a router per route only names it in start-up errors). */
export class GatewayRouteTable {
  private readonly table = new RouteTable<GatewayRoute>();

  constructor(routes: readonly GatewayRoute[] = GATEWAY_ROUTES) {
    for (const route of routes) {
      const router: Router = { name: `gateway ${route.path}`, errors: route.errors, routes: [] };
      for (const method of route.methods) this.table.add(method, route, router);
    }
  }

  /**
   * The route of a call (`method` 'WS' for an upgrade) on `path` (no query, no trailing slash), or
   * null: a call no route declares goes to any node, which answers it (its 404, its 400 for a
   * percent-encoding it cannot read).
   */
  match(method: string, path: string): RouteMatch | null {
    let m;
    try {
      m = this.table.match(method, path);
    } catch {
      return null;
    }
    if (!m) return null;
    return { route: m.route, id: m.params.id ?? null };
  }
}
