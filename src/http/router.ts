/**
 * What a router file declares, and all it declares: its routes (method, path pattern, handler), its
 * WebSocket upgrades, which of them are public, and which wire format its errors take. The seam
 * (seam.ts) does the rest for every route alike: authorization, reading a JSON body, mapping errors.
 *
 * Path patterns are literal segments and `:name` parameters (`/session/:id/execute`); a parameter
 * matches one non-empty segment and reaches the handler percent-decoded. A last segment `*name` takes
 * the rest of the path (slashes included, possibly empty). One trailing slash and the
 * query string are ignored when matching.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { ErrorFormat } from './errorFormats';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Path parameters by name, percent-decoded. */
  readonly params: Readonly<Record<string, string>>;
  /** The parsed JSON body when the route declares `body: 'json'` (undefined when it was empty). */
  readonly body: unknown;
  /** The query string without its '?' ('' when there is none). */
  readonly query: string;
}

export interface Route {
  method: HttpMethod;
  path: string;
  /** Served without a token. */
  public?: boolean;
  /**
   * 'json': the seam reads the body (bounded by BROKER_MAX_BODY_BYTES) and parses it before the
   * handler runs, after authorization. Otherwise the handler reads the request itself, if at all.
   */
  body?: 'json';
  /** Writes the answer (httpJson.ts, sse.ts); whatever it throws or rejects with is the router's error format's. */
  handle(ctx: RouteContext): void | Promise<void>;
}

export interface UpgradeContext {
  readonly req: IncomingMessage;
  readonly params: Readonly<Record<string, string>>;
  readonly query: string;
}

/** A WebSocket endpoint: `accept` gets the socket once the handshake is done (authorization passed). */
export interface AcceptedUpgrade {
  path: string;
  public?: boolean;
  /**
   * Runs before the handshake, after authorization: what it throws is answered in the router's
   * error format instead of an upgrade (a WebSocket to an unknown workspace gets its 404 here).
   */
  check?(ctx: UpgradeContext): void | Promise<void>;
  accept(ws: WebSocket, ctx: UpgradeContext): void;
}

/**
 * A WebSocket endpoint that takes the connection as it came, before any handshake (a gateway tunnels
 * it to a node, whose own handshake answers). What it rejects with before it wrote to the socket is
 * answered in the router's error format.
 */
export interface RelayedUpgrade {
  path: string;
  public?: boolean;
  relay(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: UpgradeContext): Promise<void>;
}

export type UpgradeRoute = AcceptedUpgrade | RelayedUpgrade;

export interface Router {
  /** Names the router in start-up errors (a route declared twice). */
  name: string;
  errors: ErrorFormat;
  /**
   * The part of the URL space this API owns (`/v1/sandboxes`): a request under it that matches no
   * route is answered 401/404 in this router's format. Elsewhere the seam's default format answers.
   */
  pathPrefix?: string;
  routes: Route[];
  upgrades?: UpgradeRoute[];
}
