/** JSON responses and THE mapping from errors to responses: `{"detail": ..., "code": ...}`, never a stack. */
import type { ServerResponse } from 'node:http';
import { BrokerError } from '../common/errors';
import { logger } from '../common/logger';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

export interface ErrorResponse {
  status: number;
  body: { detail: string; code: string };
}

export function errorResponse(err: unknown, path: string): ErrorResponse {
  if (err instanceof BrokerError) {
    if (err.status >= 500) logger.warn({ path, code: err.code }, err.message);
    // 499 (the client went away) is never seen by that client; anyone else gets a plain 400.
    return { status: err.status === 499 ? 400 : err.status, body: { detail: err.detail, code: err.code } };
  }
  // Errors raised by express itself (a malformed URI, for instance) carry a 4xx status.
  const status = (err as { status?: number }).status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { status, body: { detail: (err as Error).message || 'Bad Request', code: 'bad_request' } };
  }
  logger.error({ err, path }, 'unhandled error');
  return { status: 500, body: { detail: 'Internal server error', code: 'internal' } };
}

export function sendError(res: ServerResponse, err: unknown, path: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const { status, body } = errorResponse(err, path);
  const headers: Record<string, string> = {};
  if (status === 401) headers['WWW-Authenticate'] = 'Bearer';
  if (status === 413) headers.Connection = 'close'; // the rest of the body is not read
  sendJson(res, status, body, headers);
}
