/**
 * Bearer-token authentication (BROKER_TOKEN). Every route but GET /health needs
 * `Authorization: Bearer <token>` or the execd spec's `X-EXECD-ACCESS-TOKEN: <token>`; /metrics too
 * unless BROKER_METRICS_PUBLIC=1. Tokens are compared in constant time (over their SHA-256 digests,
 * so neither the content nor the length leaks through timing).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { BrokerError } from '../common/errors';

export class UnauthorizedError extends BrokerError {
  constructor() {
    super(401, 'unauthorized', 'Missing or invalid access token: send Authorization: Bearer <token> or X-EXECD-ACCESS-TOKEN');
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export function presentedToken(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  if (typeof header === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (m) return m[1];
  }
  const execd = req.headers['x-execd-access-token'];
  return typeof execd === 'string' && execd.length > 0 ? execd : null;
}

/** Whether the request carries `token` (constant time). */
export function tokenChecker(token: string): (req: IncomingMessage) => boolean {
  const expected = digest(token);
  return (req) => {
    const given = presentedToken(req);
    return given !== null && timingSafeEqual(digest(given), expected);
  };
}

export function requireToken(token: string, metricsPublic: boolean) {
  const hasToken = tokenChecker(token);
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (req.method === 'GET' && (req.path === '/health' || (metricsPublic && req.path === '/metrics'))) return next();
    next(hasToken(req) ? undefined : new UnauthorizedError());
  };
}
