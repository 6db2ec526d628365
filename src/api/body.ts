/**
 * JSON body reading for every route: one bounded read, one JSON.parse, clear 4xx errors.
 * Any content type is read as JSON (curl -d sends form encoding; aiohttp sends JSON). An empty
 * body is `undefined`, which routes with optional bodies (acquire, release) treat as `{}`.
 */
import type { NextFunction, Request, Response } from 'express';
import { BadRequestError, PayloadTooLargeError } from '../common/errors';

export function jsonBody(maxBytes: number) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method === 'GET' || req.method === 'HEAD') return next();
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      res.setHeader('Connection', 'close');
      return next(tooLarge(maxBytes));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > maxBytes) {
        failed = true;
        res.setHeader('Connection', 'close');
        next(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', (err) => {
      if (!failed) {
        failed = true;
        next(new BadRequestError(`could not read the request body: ${err.message}`));
      }
    });
    req.on('end', () => {
      if (failed) return;
      if (size === 0) {
        req.body = undefined;
        return next();
      }
      const text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8');
      try {
        req.body = JSON.parse(text);
      } catch (err) {
        return next(new BadRequestError(`Request body is not valid JSON: ${(err as Error).message}`));
      }
      next();
    });
  };
}

function tooLarge(maxBytes: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`Request body exceeds the limit of ${maxBytes} bytes (BROKER_MAX_BODY_BYTES)`);
}
