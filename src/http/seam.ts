/**
 * THE request seam: every HTTP request, every WebSocket upgrade and every request Node's parser
 * rejects comes in here, and each goes through the same steps: find the route, `authorize(req)`
 * unless the route is public, read the JSON body if the route wants one, run the handler, and send
 * any error through the route's error format. Routers (one file per API) only declare routes.
 *
 * Why node:http with a small router of our own, and not express: express costs 100-200 us of CPU per
 * request here against ~20 us for plain node:http (its router walk, `req`/`res` decoration and
 * response helpers), which is why the pool's hot routes already bypassed it; keeping express for the
 * cold routes would have kept a second auth entry point and a second catch site. What express gave
 * the cold routes (a path match, a JSON answer, a 404) takes a Map lookup and a regex here, and
 * WebSocket upgrades and SSE streams never went through express anyway.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { BadRequestError, brokerError } from '../common/errors';
import { readJsonBody } from './body';
import { sendErrorReply, sendErrorReplyOnSocket } from './httpJson';
import { UnauthorizedError, type Authorize } from './auth';
import type { ErrorFormat } from './errorFormats';
import { BadParamEncodingError, RouteTable, formatForPath, splitTarget, type Match } from './routeTable';
import type { Route, Router, UpgradeRoute } from './router';
import { WebSocketUpgrades } from './webSockets';

export interface SeamOptions {
  authorize: Authorize;
  maxBodyBytes: number;
  /** Answers requests that no router's prefix claims (unknown routes, malformed requests). */
  defaultErrors: ErrorFormat;
}

/** A route as the seam registered it; `WS` is a WebSocket upgrade. */
export interface RegisteredRoute {
  method: string;
  path: string;
  public: boolean;
  router: string;
}

/** A request for a route nobody declared (or a method the route does not take). */
export class RouteNotFoundError extends brokerError('not_found', 'route_not_found', (method: string, path: string) => `Not Found: ${method} ${path}`) {}

/** The table key of upgrades (they are all GETs). */
const UPGRADE = 'UPGRADE';

export class HttpSeam {
  private readonly routes = new RouteTable<Route>();
  private readonly upgrades = new RouteTable<UpgradeRoute>();
  private readonly webSockets: WebSocketUpgrades;

  /** Throws when two routes have the same method and pattern: a start-up error, not a runtime one. */
  constructor(
    private readonly routers: readonly Router[],
    private readonly options: SeamOptions,
  ) {
    for (const router of routers) {
      for (const route of router.routes) this.routes.add(route.method, route, router);
      for (const upgrade of router.upgrades ?? []) this.upgrades.add(UPGRADE, upgrade, router);
    }
    this.webSockets = new WebSocketUpgrades(options.maxBodyBytes);
  }

  /** Every route and WebSocket upgrade (`WS`) mounted, as its router declared it: the OpenAPI document's truth. */
  routeList(): RegisteredRoute[] {
    return this.routers.flatMap((router) => [
      ...router.routes.map((r) => ({ method: r.method as string, path: r.path, public: r.public === true, router: router.name })),
      ...(router.upgrades ?? []).map((u) => ({ method: 'WS', path: u.path, public: u.public === true, router: router.name })),
    ]);
  }

  readonly serveRequest: RequestListener = (req, res) => {
    const method = req.method ?? 'GET';
    const { path, query } = splitTarget(req.url ?? '/');
    let match: Match<Route> | null;
    try {
      // HEAD is GET without a body (Node leaves the body out of the answer).
      match = this.routes.match(method, path) ?? (method === 'HEAD' ? this.routes.match('GET', path) : null);
    } catch (err) {
      // a bad percent-encoding in a parameter, in the format of the route's own router
      const bad = err as BadParamEncodingError;
      return this.refuse(req, res, path, bad.refusal, bad.router.errors);
    }
    if (!match) return this.refuse(req, res, path, null);
    this.run(match, req, res, query).catch((err) => sendErrorReply(res, match.router.errors.reply(err, `${method} ${path}`)));
  };

  private async run({ route, params }: Match<Route>, req: IncomingMessage, res: ServerResponse, query: string): Promise<void> {
    // Before the body is read: an unauthenticated client cannot make us buffer 64 MiB.
    if (!route.public && !this.options.authorize(req)) throw new UnauthorizedError();
    const body = route.body === 'json' ? await readJsonBody(req, this.options.maxBodyBytes) : undefined;
    await route.handle({ req, res, params, body, query });
  }

  /**
   * No route: a 401 for a client without the token (the route table is not for strangers), else `err`
   * or a 404, in `format`, or else that of the router owning the path's prefix.
   */
  private refuse(req: IncomingMessage, res: ServerResponse, path: string, err: unknown, format = formatForPath(this.routers, path, this.options.defaultErrors)): void {
    const reason = !this.options.authorize(req) ? new UnauthorizedError() : (err ?? new RouteNotFoundError(req.method ?? '', rawPath(req.url)));
    sendErrorReply(res, format.reply(reason, `${req.method} ${path}`));
  }

  readonly serveUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy()); // a client that resets mid-handshake is no error of ours
    const { path, query } = splitTarget(req.url ?? '/');
    const where = `UPGRADE ${path}`;
    let format = formatForPath(this.routers, path, this.options.defaultErrors);
    let match: Match<UpgradeRoute> | null;
    try {
      match = this.upgrades.match(UPGRADE, path);
    } catch (err) {
      // A bad percent-encoding in a parameter: refused like an unknown route, the token checked first,
      // in the format of the route's own router.
      const bad = err as BadParamEncodingError;
      return sendErrorReplyOnSocket(socket, bad.router.errors.reply(this.options.authorize(req) ? bad.refusal : new UnauthorizedError(), where));
    }
    try {
      if (match) format = match.router.errors;
      if (!match?.route.public && !this.options.authorize(req)) throw new UnauthorizedError();
      if (String(req.headers.upgrade).toLowerCase() !== 'websocket') {
        throw new BadRequestError(`Upgrade: ${req.headers.upgrade} is not offered: only WebSocket upgrades are (send the request without an Upgrade header)`);
      }
      if (!match) throw new RouteNotFoundError(req.method ?? '', rawPath(req.url));
      const { route, params } = match;
      const ctx = { req, params, query };
      const routeFormat = format;
      const refused = (err: unknown): void => sendErrorReplyOnSocket(socket, routeFormat.reply(err, where));
      if ('relay' in route) return void route.relay(req, socket, head, ctx).catch(refused);
      const upgrade = (): void => this.webSockets.upgrade(req, socket, head, format, (ws) => route.accept(ws, ctx));
      if (!route.check) return upgrade();
      Promise.resolve()
        .then(() => route.check!(ctx))
        .then(upgrade, refused);
    } catch (err) {
      sendErrorReplyOnSocket(socket, format.reply(err, where));
    }
  };

  /** Requests Node's parser rejects (an unknown method, a malformed header) never reach a route. */
  readonly serveClientError = (err: Error & { code?: string }, socket: Duplex): void => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const reply = this.options.defaultErrors.reply(new BadRequestError(`Malformed HTTP request (${err.code ?? err.message})`), 'client error');
    if (err.code === 'HPE_HEADER_OVERFLOW') reply.status = 431;
    sendErrorReplyOnSocket(socket, reply);
  };

  get openWebSockets(): number {
    return this.webSockets.openCount;
  }

  /** Closes open WebSockets (HTTP connections are the server's to close). */
  close(): Promise<void> {
    return this.webSockets.close();
  }
}

/** The path as the client wrote it (with its trailing slash), for the 404 message. */
function rawPath(url = '/'): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}
