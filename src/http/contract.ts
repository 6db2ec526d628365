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
 * Every API lists its contracts in src/api/contracts.ts, which a fuzz suite can read inputs from.
 */
import type { ApiDoc, OperationDoc } from './openApiTypes';
import type { HttpMethod, Route, RouteContext, UpgradeContext, UpgradeRoute } from './router';
import type { WebSocket } from 'ws';

/** A WebSocket upgrade is declared as `WS`: a GET answered 101. */
export type ContractMethod = HttpMethod | 'WS';

export interface RouteContract extends OperationDoc {
  readonly method: ContractMethod;
  /** The route table's pattern: literal segments, `:name` parameters, a last `*rest`. */
  readonly path: string;
  /** Served without a token. */
  readonly public?: boolean;
  /**
   * Whether the seam reads the body and parses it as JSON before the handler. Default: when the
   * contract declares a JSON body. `false` for a body the handler reads itself, or ignores unread.
   */
  readonly readsJson?: boolean;
}

/** One API's contracts: the words of its tag, its error format, and every route it serves, by name. */
export interface ApiContract<R extends Record<string, RouteContract> = Record<string, RouteContract>> extends Omit<ApiDoc, 'operations'> {
  readonly routes: R;
}

/** `'POST /session/:sessionId/execute'`: how the route table and the document name a route. */
export function contractKey(route: Pick<RouteContract, 'method' | 'path'>): string {
  return `${route.method} ${route.path}`;
}

/** The API's description for the OpenAPI document: its contracts keyed by route. */
export function apiDocOf(api: ApiContract): ApiDoc {
  const { routes, ...rest } = api;
  const operations: Record<string, OperationDoc> = {};
  for (const route of Object.values(routes)) {
    const key = contractKey(route);
    if (operations[key]) throw new Error(`route ${key} has two contracts in API '${api.tag}'`);
    const operation: Partial<RouteContract> = { ...route };
    for (const own of ['method', 'path', 'public', 'readsJson'] as const) delete operation[own];
    operations[key] = operation as OperationDoc;
  }
  return { ...rest, operations };
}

function readsJson(route: RouteContract): boolean {
  return route.readsJson ?? (route.body !== undefined && (route.body.contentType ?? 'application/json') === 'application/json');
}

/** Which contract each served route came from, for the test that holds routes and contracts equal. */
const contractOfRoute = new WeakMap<Route | UpgradeRoute, RouteContract>();

export function contractOf(route: Route | UpgradeRoute): RouteContract | undefined {
  return contractOfRoute.get(route);
}

/** The route the seam serves for `contract`: its method, path and guard are the contract's. */
export function served(contract: RouteContract, handle: (ctx: RouteContext) => void | Promise<void>): Route {
  if (contract.method === 'WS') throw new Error(`${contractKey(contract)} is a WebSocket: serve it with upgrade()`);
  const route: Route = {
    method: contract.method,
    path: contract.path,
    ...(contract.public ? { public: true } : {}),
    ...(readsJson(contract) ? { body: 'json' as const } : {}),
    handle,
  };
  contractOfRoute.set(route, contract);
  return route;
}

/** The WebSocket the seam upgrades to for `contract` (method `WS`). */
export function upgrade(contract: RouteContract, socket: { check?(ctx: UpgradeContext): void | Promise<void>; accept(ws: WebSocket, ctx: UpgradeContext): void }): UpgradeRoute {
  if (contract.method !== 'WS') throw new Error(`${contractKey(contract)} is not a WebSocket`);
  const route: UpgradeRoute = { path: contract.path, ...(contract.public ? { public: true } : {}), ...socket };
  contractOfRoute.set(route, contract);
  return route;
}
