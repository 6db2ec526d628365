/** JSON responses and THE mapping from errors to responses: `{"detail": ..., "code": ...}`, never a stack. */
import type { ServerResponse } from 'node:http';
import { BrokerError } from '../common/errors';
import { logger } from '../common/logger';

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const text = JSON.stringify(body);
  // A flat [name, value, ...] list: node takes it as is (no header object to build and walk), the
  // common case on the execute path.
  const list = ['Content-Type', JSON_TYPE, 'Content-Length', String(Buffer.byteLength(text))];
  if (headers) for (const [name, value] of Object.entries(headers)) list.push(name, value);
  res.writeHead(status, list);
  res.end(text);
}

/** Above this many characters of string fields, a response is streamed instead of built whole. */
const STREAM_ABOVE_CHARS = 1 << 20;
/** Characters of one string serialized and written at a time (one write: at most ~6x this in bytes). */
const SLICE_CHARS = 64 * 1024;

/**
 * Like sendJson, but a body with large top-level strings (a command's output: up to 2 x 16 MiB by
 * default) is written in slices, waiting for the socket to drain between them. JSON escapes a
 * control byte as 6 characters, so a binary output once cost ~6x its size twice over (the JSON string
 * and its UTF-8 copy): a 16 MiB flood of NUL bytes peaked at +400 MB. Now the peak is the output's own
 * string plus one slice. Large answers go out chunked (no Content-Length): every HTTP/1.1 client reads it.
 */
export async function sendJsonStreamed(res: ServerResponse, status: number, body: Record<string, unknown>): Promise<void> {
  if (!hasStringsLongerThan(body, SLICE_CHARS)) return sendJson(res, status, body); // the common case, without arrays
  const big = Object.keys(body).filter((k) => typeof body[k] === 'string' && (body[k] as string).length > SLICE_CHARS);
  const total = big.reduce((n, k) => n + (body[k] as string).length, 0);
  if (total <= STREAM_ABOVE_CHARS) return sendJson(res, status, body);
  res.writeHead(status, { 'Content-Type': JSON_TYPE });
  const keys = Object.keys(body);
  for (const [i, key] of keys.entries()) {
    if (res.destroyed) return;
    const prefix = `${i === 0 ? '{' : ','}${JSON.stringify(key)}:`;
    const value = body[key];
    if (!big.includes(key)) {
      if (!res.write(prefix + JSON.stringify(value))) await drained(res);
      continue;
    }
    const text = value as string;
    res.write(prefix + '"');
    for (let at = 0; at < text.length; ) {
      if (res.destroyed) return; // the client left mid-answer
      let end = Math.min(text.length, at + SLICE_CHARS);
      // Never split a surrogate pair between two slices.
      if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
      const piece = JSON.stringify(text.slice(at, end));
      if (!res.write(piece.slice(1, -1))) await drained(res);
      at = end;
    }
    res.write('"');
  }
  if (!res.destroyed) res.end('}');
}

function hasStringsLongerThan(body: Record<string, unknown>, chars: number): boolean {
  for (const key in body) {
    const value = body[key];
    if (typeof value === 'string' && value.length > chars) return true;
  }
  return false;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Resolves when the response can take more, or when it closed (the client left: nothing more to do). */
function drained(res: ServerResponse): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
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
