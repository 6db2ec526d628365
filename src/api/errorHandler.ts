/** Express's 404 and final error handler, over the one mapping in httpJson.ts. */
import type { NextFunction, Request, Response } from 'express';
import { sendError, sendJson } from './httpJson';

export function notFound(req: Request, res: Response): void {
  sendJson(res, 404, { detail: `Not Found: ${req.method} ${req.path}`, code: 'route_not_found' });
}

export function errorHandler(err: unknown, req: Request, res: Response, _next: NextFunction): void {
  sendError(res, err, req.path);
}
