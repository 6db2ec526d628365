/**
 * A route's contract, written once: its method and path, whether it needs the token, its inputs
 * (path and query parameters, body) and its answers (each success by status, and when each error of
 * its API's format is answered). Three things are driven by the same object:
 *
 * - the route table: a router serves a route from its contract (`served`, `upgrade`), so the method
 *   and path the seam matches are the contract's;
 * - the input checks: a body's or a query's schema (TypeBox, with `x-refusal` wording its 400s)
 *   compiles into the route's check (schemaCheck.ts);
 * - the OpenAPI document: `apiDocOf` hands the contracts to the document builder (openApiDocument.ts).
 *
 * - the cluster: a gateway serves each route where its contract says (`gateway`: cluster/gateway);
 * - the error format: a router answers in its API's (`apiErrors`).
 *
 * Every API lists its contracts in src/api/contracts.ts, which a fuzz suite can read inputs from.
 */
import type { ApiDoc, OperationDoc } from './openApiTypes';
import type { AcceptedUpgrade, HttpMethod, RelayedUpgrade, Route, RouteContext, Router, UpgradeRoute } from './router';
import { ERROR_FORMATS } from './errorFormats';

/** A WebSocket upgrade is declared as `WS`: a GET answered 101. */
export type ContractMethod = HttpMethod | 'WS';

/**
 * Where a cluster's gateway sends a route's calls:
 * - `id`: to the node the path's first parameter names (ids name their node: cluster/clusterIds.ts);
 * - `acquire`: placed on a node with a free session, sent on when it is full (the pool's acquires);
 * - `create`: placed on a node with capacity (a new workspace, lifecycle sandbox or task);
 * - `warm-images`: each image of a warm-up to the nodes its acquires are placed on (POST /images);
 * - `list-workspaces`, `list-lifecycle`, `list-images`, `list-snapshots`, `list-lifecycle-snapshots`:
 *   to every node, their answers merged into one of that shape;
 * - `home`: to the home node, for what a broker holds one of and the API names no id for;
 * - `any`: to any serving node, for answers that are the same on every node;
 * - `gateway`: answered by the gateway itself;
 * - `node`: a node's own route for its gateways: a gateway serves it to no client.
 */
export type Destination = 'id' | 'acquire' | 'create' | 'warm-images' | 'list-workspaces' | 'list-lifecycle' | 'list-images' | 'list-snapshots' | 'list-lifecycle-snapshots' | 'home' | 'any' | 'gateway' | 'node';

/** A route served without a token when the broker's metrics are public (BROKER_METRICS_PUBLIC=1). */
export const PUBLIC_WITH_METRICS = 'with BROKER_METRICS_PUBLIC';

export interface RouteContract extends OperationDoc {
  readonly method: ContractMethod;
  /** The route table's pattern: literal segments, `:name` parameters, a last `*rest`. */
  readonly path: string;
  /** Served without a token (always, or when BROKER_METRICS_PUBLIC says so). */
  readonly public?: boolean | typeof PUBLIC_WITH_METRICS;
  /** Where a gateway sends it; default: its API's `gateway`. */
  readonly gateway?: Destination;
  /**
   * Whether the seam reads the body and parses it as JSON before the handler. Default: when the
   * contract declares a JSON body. `false` for a body the handler reads itself, or ignores unread.
   */
  readonly readsJson?: boolean;
}

/** One API's contracts: the words of its tag, its error format, and every route it serves, by name. */
export interface ApiContract<R extends Record<string, RouteContract> = Record<string, RouteContract>> extends Omit<ApiDoc, 'operations'> {
  readonly routes: R;
  /**
   * The part of the URL space the API owns (`/v1`): a request under it that matches no route is
   * answered in the API's error format (elsewhere: the pool API's).
   */
  readonly pathPrefix?: string;
  /** Where a gateway sends the API's routes that name no destination of their own. */
  readonly gateway?: Destination;
}

/** Where a gateway sends `route` of `api`. Throws for a route that says nowhere (a contract to fix). */
export function destinationOf(api: ApiContract, route: RouteContract): Destination {
  const to = route.gateway ?? api.gateway;
  if (to === undefined) throw new Error(`${contractKey(route)} (API '${api.tag}') says nowhere a gateway sends it: give it or its API a destination`);
  return to;
}

/** The name of the path parameter a route of destination `id` is routed by: its first. */
export function routingParam(route: Pick<RouteContract, 'path'>): string | null {
  return /\/[:*]([A-Za-z_]\w*)/.exec(route.path)?.[1] ?? null;
}

/** `'POST /session/:sessionId/execute'`: how the route table and the document name a route. */
export function contractKey(route: Pick<RouteContract, 'method' | 'path'>): string {
  return `${route.method} ${route.path}`;
}

/**
 * The API's description for the OpenAPI document: its contracts keyed by route. A node's own routes
 * (destination `node`: a gateway's calls to it) are no part of what clients are shown.
 */
export function apiDocOf(api: ApiContract): ApiDoc {
  const { tag, description, errors, pathParams, schemas, routes } = api;
  const operations: Record<string, OperationDoc> = {};
  for (const route of Object.values(routes)) {
    const key = contractKey(route);
    if (operations[key]) throw new Error(`route ${key} has two contracts in API '${api.tag}'`);
    if (destinationOf(api, route) === 'node') continue;
    const operation: Partial<RouteContract> = { ...route };
    for (const own of ['method', 'path', 'public', 'readsJson', 'gateway'] as const) delete operation[own];
    operations[key] = operation as OperationDoc;
  }
  return { tag, description, errors, ...(pathParams ? { pathParams } : {}), operations, ...(schemas ? { schemas } : {}) };
}

/** What a router of `api`'s routes declares of its errors: they take the API's format, under the URL space it owns. */
export function apiErrors(api: ApiContract): Pick<Router, 'errors' | 'pathPrefix'> {
  return { errors: ERROR_FORMATS[api.errors], ...(api.pathPrefix !== undefined ? { pathPrefix: api.pathPrefix } : {}) };
}

function readsJson(route: RouteContract): boolean {
  return route.readsJson ?? (route.body !== undefined && (route.body.contentType ?? 'application/json') === 'application/json');
}

/** Which contract each served route came from, for the test that holds routes and contracts equal. */
const contractOfRoute = new WeakMap<Route | UpgradeRoute, RouteContract>();

export function contractOf(route: Route | UpgradeRoute): RouteContract | undefined {
  return contractOfRoute.get(route);
}

export interface ServeOptions {
  /** BROKER_METRICS_PUBLIC: a route public with it is served without a token. */
  metricsPublic?: boolean;
  /** The handler takes the body as it comes, unread (a gateway relays it to a node). */
  relaysBody?: boolean;
}

/** Whether `contract`'s route is served without a token, under `options`. */
export function isPublic(contract: RouteContract, options: ServeOptions = {}): boolean {
  return contract.public === true || (contract.public === PUBLIC_WITH_METRICS && options.metricsPublic === true);
}

/** The route the seam serves for `contract`: its method, path and guard are the contract's. */
export function served(contract: RouteContract, handle: (ctx: RouteContext) => void | Promise<void>, options: ServeOptions = {}): Route {
  if (contract.method === 'WS') throw new Error(`${contractKey(contract)} is a WebSocket: serve it with upgrade()`);
  const route: Route = {
    method: contract.method,
    path: contract.path,
    ...(isPublic(contract, options) ? { public: true } : {}),
    ...(readsJson(contract) && !options.relaysBody ? { body: 'json' as const } : {}),
    handle,
  };
  contractOfRoute.set(route, contract);
  return route;
}

/** The WebSocket the seam upgrades to for `contract` (method `WS`), or hands on as it came (`relay`). */
export function upgrade(contract: RouteContract, socket: Omit<AcceptedUpgrade, 'path' | 'public'>): UpgradeRoute;
export function upgrade(contract: RouteContract, socket: Omit<RelayedUpgrade, 'path' | 'public'>): UpgradeRoute;
export function upgrade(contract: RouteContract, socket: Omit<AcceptedUpgrade, 'path' | 'public'> | Omit<RelayedUpgrade, 'path' | 'public'>): UpgradeRoute {
  if (contract.method !== 'WS') throw new Error(`${contractKey(contract)} is not a WebSocket`);
  const route = { path: contract.path, ...(isPublic(contract) ? { public: true } : {}), ...socket } as UpgradeRoute;
  contractOfRoute.set(route, contract);
  return route;
}
