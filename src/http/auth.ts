/**
 * Bearer-token authentication (BROKER_TOKEN): THE check every route and every WebSocket upgrade goes
 * through (seam.ts), unless its router declares it public (GET /health; /metrics with
 * BROKER_METRICS_PUBLIC=1). A client sends `Authorization: Bearer <token>` or execd's
 * `X-EXECD-ACCESS-TOKEN: <token>` or the lifecycle API's `OPEN-SANDBOX-API-KEY: <token>` (OpenSandbox's
 * SDK sends it to every endpoint of a sandbox too); a browser's WebSocket offers the subprotocol `bearer.<token>`.
 * Tokens are compared in constant time (over their SHA-256 digests, so neither the content nor the
 * length leaks through timing).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { brokerError } from '../common/errors';

export class UnauthorizedError extends brokerError('unauthorized', 'unauthorized', () => 'Missing or invalid access token: send Authorization: Bearer <token> or X-EXECD-ACCESS-TOKEN') {}

/** Whether a request may reach a route that is not public. */
export type Authorize = (req: IncomingMessage) => boolean;

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** The WebSocket subprotocol prefix that carries the token from a browser. */
export const BEARER_PROTOCOL = 'bearer.';

export function presentedToken(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  if (typeof header === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (m) return m[1];
  }
  const execd = req.headers['x-execd-access-token'];
  if (typeof execd === 'string' && execd.length > 0) return execd;
  const openSandbox = req.headers['open-sandbox-api-key'];
  if (typeof openSandbox === 'string' && openSandbox.length > 0) return openSandbox;
  return webSocketProtocolToken(req);
}

/**
 * A browser's WebSocket cannot send headers: the workspace page offers the token as a subprotocol,
 * `bearer.<token>` (and the server echoes it, as a handshake must). Only on upgrades.
 */
function webSocketProtocolToken(req: IncomingMessage): string | null {
  const offered = req.headers['sec-websocket-protocol'];
  if (typeof offered !== 'string' || String(req.headers.upgrade).toLowerCase() !== 'websocket') return null;
  for (const protocol of offered.split(',')) {
    const p = protocol.trim();
    if (p.startsWith(BEARER_PROTOCOL) && p.length > BEARER_PROTOCOL.length) return p.slice(BEARER_PROTOCOL.length);
  }
  return null;
}

/** The broker's one `authorize(req)`: every request passes when it runs without a token. */
export function createAuthorize(token: string | null): Authorize {
  if (token === null) return () => true;
  const expected = digest(token);
  return (req) => {
    const given = presentedToken(req);
    return given !== null && timingSafeEqual(digest(given), expected);
  };
}
