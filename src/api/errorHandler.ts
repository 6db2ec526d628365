/** The one place where errors become HTTP responses: `{"detail": ..., "code": ...}`, never a stack. */
import type { NextFunction, Request, Response } from 'express';
import { BrokerError } from '../common/errors';
import { logger } from '../common/logger';

export function notFound(req: Request, res: Response): void {
  res.status(404).json({ detail: `Not Found: ${req.method} ${req.path}`, code: 'route_not_found' });
}

export function errorHandler(err: unknown, req: Request, res: Response, _next: NextFunction): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof BrokerError) {
    if (err.status >= 500) logger.warn({ path: req.path, code: err.code }, err.message);
    res.status(err.status === 499 ? 400 : err.status).json({ detail: err.detail, code: err.code });
    return;
  }
  // Errors raised by express itself (a malformed URI, for instance) carry a 4xx status.
  const status = (err as { status?: number }).status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    res.status(status).json({ detail: (err as Error).message || 'Bad Request', code: 'bad_request' });
    return;
  }
  logger.error({ err, path: req.path }, 'unhandled error');
  res.status(500).json({ detail: 'Internal server error', code: 'internal' });
}
