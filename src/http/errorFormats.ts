/**
 * THE mapping from errors to HTTP answers, one object per wire format. A router names its format;
 * the seam (seam.ts) sends every error of that router's routes through it, and through nothing else.
 *
 * - the pool API: `{"detail": "...", "code": "session_not_found"}`, the code being the domain's;
 * - OpenSandbox (execd and lifecycle APIs): `{"code": "INVALID_REQUEST_BODY", "message": "..."}`, the
 *   code being OpenSandbox's.
 *
 * A domain error's kind decides the status, the same in both formats. Never a stack trace to a client:
 * anything that is not a BrokerError is logged here and answered as a plain 500, but for a file
 * system's refusal of a path (fileSystemRefusal), which is the client's 4xx even where a check missed it.
 */
import { BrokerError, type ErrorKind } from '../common/errors';
import { fileSystemRefusal } from '../common/fileSystemErrors';
import { logger } from '../common/logger';
import type { ErrorStyle } from './openApiTypes';

const STATUS_OF_KIND: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  too_large: 413,
  unsupported: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  unsatisfiable: 416,
  busy: 409,
  gone: 410,
  rejected: 422,
  unavailable: 503,
  backend: 502,
  timeout: 504,
  insufficient_storage: 507,
  not_implemented: 501,
  // The client that left never sees it; anyone else who gets it sees a plain 400.
  aborted: 400,
  internal: 500,
};

/** What one error becomes on the wire. `body` is the JSON text. */
export interface ErrorReply {
  status: number;
  body: string;
  headers: Record<string, string>;
}

export interface ErrorFormat {
  readonly name: string;
  /** `where` (method and path) is for the log only. */
  reply(err: unknown, where: string): ErrorReply;
}

interface Described {
  status: number;
  kind: ErrorKind;
  /** The domain's code, 'internal' for a foreign error. */
  code: string;
  message: string;
}

function describe(err: unknown, where: string): Described {
  const refusal = fileSystemRefusal(err);
  if (refusal) {
    logger.warn({ err, where }, 'a file system error no check caught: answered as the client fault it is');
    err = refusal;
  }
  if (err instanceof BrokerError) {
    const status = STATUS_OF_KIND[err.kind];
    // The broker's faults only: a 501 (a route this configuration does not serve) is the client's to read.
    if (err.isBrokerFault) logger.warn({ where, code: err.code }, err.message);
    return { status, kind: err.kind, code: err.code, message: err.detail };
  }
  logger.error({ err, where }, 'unhandled error');
  return { status: 500, kind: 'internal', code: 'internal', message: 'Internal server error' };
}

/**
 * Retry-After on every 503 (no session within the acquire timeout, none could be prepared, shutting
 * down): nothing was done, the request may be sent again. One second lets leases end and broken slots
 * be rebuilt; the acquire itself already waited its timeout in the queue.
 */
const RETRY_AFTER_SECONDS = 1;

function reply(status: number, body: object, err: unknown): ErrorReply {
  const headers: Record<string, string> = err instanceof BrokerError && err.headers ? { ...err.headers } : {};
  if (status === 401) headers['WWW-Authenticate'] = 'Bearer';
  if (status === 503) headers['Retry-After'] = String(RETRY_AFTER_SECONDS);
  if (status === 413) headers.Connection = 'close'; // the rest of the body is not read
  return { status, body: JSON.stringify(body), headers };
}

/** The pool API's body (`detail`, as its clients read it), with the domain code beside it. */
export const poolErrorFormat: ErrorFormat = {
  name: 'pool',
  reply(err, where) {
    const { status, code, message } = describe(err, where);
    const out = reply(status, { detail: message, code, ...(err instanceof BrokerError ? err.fields : undefined) }, err);
    if (err instanceof BrokerError && err.retryAfterSeconds !== undefined) out.headers['Retry-After'] = String(err.retryAfterSeconds);
    return out;
  },
};

/**
 * OpenSandbox's codes: INVALID_REQUEST_BODY, RUNTIME_ERROR and NOT_SUPPORTED are execd's, NOT_FOUND is
 * the lifecycle API's (execd names only files and contexts: FILE_NOT_FOUND, CONTEXT_NOT_FOUND, which
 * OPEN_SANDBOX_CODE_OF_ERROR gives the domain errors that mean them). Neither API names a code for
 * 401 (UNAUTHORIZED) or 416 (RANGE_NOT_SATISFIABLE).
 */
const OPEN_SANDBOX_CODE_OF_KIND: Readonly<Record<ErrorKind, string>> = {
  invalid: 'INVALID_REQUEST_BODY',
  too_large: 'INVALID_REQUEST_BODY',
  unsupported: 'NOT_SUPPORTED',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  unsatisfiable: 'RANGE_NOT_SATISFIABLE',
  busy: 'RUNTIME_ERROR',
  gone: 'RUNTIME_ERROR',
  rejected: 'RUNTIME_ERROR',
  unavailable: 'RUNTIME_ERROR',
  backend: 'RUNTIME_ERROR',
  timeout: 'RUNTIME_ERROR',
  insufficient_storage: 'RUNTIME_ERROR',
  not_implemented: 'NOT_SUPPORTED',
  aborted: 'RUNTIME_ERROR',
  internal: 'RUNTIME_ERROR',
};

/** Domain codes with an OpenSandbox code of their own, ahead of their kind's. */
const OPEN_SANDBOX_CODE_OF_ERROR: Readonly<Record<string, string>> = {
  file_not_found: 'FILE_NOT_FOUND',
};

export const openSandboxErrorFormat: ErrorFormat = {
  name: 'opensandbox',
  reply(err, where) {
    const { status, kind, code, message } = describe(err, where);
    return reply(status, { code: OPEN_SANDBOX_CODE_OF_ERROR[code] ?? OPEN_SANDBOX_CODE_OF_KIND[kind], message }, err);
  },
};

/** Each API's format by the name its contract gives (ApiContract.errors): what its routers answer in. */
export const ERROR_FORMATS: Readonly<Record<ErrorStyle, ErrorFormat>> = { pool: poolErrorFormat, opensandbox: openSandboxErrorFormat };
