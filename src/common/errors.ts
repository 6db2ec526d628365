/**
 * The broker's error hierarchy. Core and backends throw these with a domain `kind` (what went wrong,
 * in the broker's own terms) and a `code` (which error exactly, stable for clients). They know no
 * HTTP: the api layer maps a kind to a status and a body, once per wire format (http/errorFormats.ts).
 * `detail` is what the client reads.
 */
export type ErrorKind =
  /** The request is malformed or breaks a rule: nothing was changed. */
  | 'invalid'
  /** A body or field beyond a configured limit. */
  | 'too_large'
  /** A valid request for something this broker does not offer (an option a backend lacks). */
  | 'unsupported'
  /** No or a wrong access token. */
  | 'unauthorized'
  /** Authenticated, but reaching for something out of bounds (a path outside a workspace). */
  | 'forbidden'
  | 'not_found'
  /** A Range a file's size cannot satisfy (HTTP 416). */
  | 'unsatisfiable'
  /** Conflicts with work in progress (another execute on the same session). */
  | 'busy'
  /** Existed, and is lost for good (a broken session). */
  | 'gone'
  /** Well-formed, but what it asked for failed, and nothing was leased (startup commands). */
  | 'rejected'
  /** No capacity now, or shutting down: retry later. */
  | 'unavailable'
  /** The backend failed in a way the client cannot fix. */
  | 'backend'
  /** A part the broker waited on (a sandbox's daemon) did not answer in time (HTTP 504). */
  | 'timeout'
  /** More than the node's storage budget can ever hold (an image larger than its disk budget, HTTP 507). */
  | 'insufficient_storage'
  /**
   * This broker cannot serve the route at all: sandbox groups on the local backend, parts of
   * OpenSandbox's APIs it does not serve (snapshots, egress policy). 501.
   */
  | 'not_implemented'
  /** The client left before the answer. */
  | 'aborted'
  | 'internal';

export class BrokerError extends Error {
  /** Fields a client needs beside detail and code (the running job_id of a 409), in the pool format. */
  fields?: Record<string, string | number>;
  /** Headers the answer must carry whatever its format (a 416's Content-Range). */
  headers?: Record<string, string>;
  /** When to try again, for an error of capacity (a 503 then carries Retry-After). */
  retryAfterSeconds?: number;

  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    detail: string,
  ) {
    super(detail);
    this.name = new.target.name;
  }

  get detail(): string {
    return this.message;
  }

  /** The broker's or its backend's fault rather than the request's: another attempt may succeed. */
  get isBrokerFault(): boolean {
    return this.kind === 'unavailable' || this.kind === 'backend' || this.kind === 'timeout' || this.kind === 'internal';
  }
}

/**
 * The base class of an error whose answer is its kind, its code and a detail made from the
 * constructor's arguments: each error below is one row of that table, a class of its own so that
 * callers can `new` it and test it with `instanceof` (and its name is in the logs).
 */
export function brokerError<A extends unknown[]>(kind: ErrorKind, code: string, detail: (...args: A) => string) {
  return class extends BrokerError {
    constructor(...args: A) {
      super(kind, code, detail(...args));
    }
  };
}

const asGiven = (detail: string): string => detail;

/** A malformed request: bad JSON, wrong types, forbidden paths. Nothing was changed. */
export class BadRequestError extends brokerError('invalid', 'bad_request', asGiven) {}
export class PayloadTooLargeError extends brokerError('too_large', 'payload_too_large', asGiven) {}
export class SessionNotFoundError extends brokerError('not_found', 'session_not_found', (sessionId: string) => `Session not found: ${sessionId}`) {}
/** The id is known but its lease has ended (released or reclaimed): the pool API calls it a bad request. */
export class SessionNotInUseError extends brokerError('invalid', 'session_not_in_use', (sessionId: string, why = 'already released') => `Session not in use: ${sessionId} (${why})`) {}
/** Another execute is running on the same session; we refuse rather than mix output. */
export class SessionBusyError extends brokerError('busy', 'session_busy', (sessionId: string) => `Session ${sessionId} is already executing a command; wait for it to finish`) {}
/** The lease's shell died or could not be recovered. The client must acquire a new session. */
export class SessionBrokenError extends brokerError('gone', 'session_broken', (sessionId: string, reason: string) => `Session ${sessionId} is broken (${reason}); its state is lost, acquire a new session`) {}
/** The message is the pool API's, in seconds: `timeoutMs` 120000 reads "within 120 seconds". */
export class PoolExhaustedError extends brokerError('unavailable', 'pool_exhausted', (timeoutMs: number) => `No session available within ${timeoutMs / 1000} seconds`) {}
/** Acquire: the sessions it got kept failing while being prepared (dying shells or containers). */
export class SessionUnavailableError extends brokerError('unavailable', 'session_unavailable', (attempts: number, lastError: string) => `No healthy session could be prepared (${attempts} tried; last error: ${lastError}); retry later`) {}
export class ShuttingDownError extends brokerError('unavailable', 'shutting_down', () => 'Broker is shutting down and takes no new sessions') {}
/**
 * A backend was asked for something it does not offer (a PTY session, say). A domain error: the
 * request was well formed, this backend just cannot serve it. Answered 400, as before it had a class.
 */
export class NotSupportedError extends brokerError('unsupported', 'not_supported', asGiven) {}
export class ForbiddenError extends brokerError('forbidden', 'forbidden', asGiven) {}
export class FileNotFoundError extends brokerError('not_found', 'file_not_found', (path: string) => `No such file: ${path}`) {}
/** A directory (or a device, a socket) where a regular file was wanted. */
export class NotAFileError extends brokerError('invalid', 'not_a_file', (path: string) => `Not a regular file: ${path}`) {}
/** A file where a directory was wanted (a listing of a file, a symlink given as the directory to list). */
export class NotADirectoryError extends brokerError('invalid', 'not_a_directory', (path: string, why = 'not a directory') => `${path}: ${why}`) {}
/** A backend failed in a way the client cannot fix (container gone, engine unreachable). */
export class BackendError extends brokerError('backend', 'backend_error', asGiven) {}
/** A route of a reference API the broker does not serve: said plainly, never a silent no-op. */
export class NotImplementedError extends brokerError('not_implemented', 'not_implemented', asGiven) {}
/** The caller gave up (client disconnected) before the operation finished. */
export class AbortedError extends brokerError('aborted', 'aborted', (what: string) => `${what} aborted by the client`) {}

/** A download's Range outside the file (RFC 9110 416, with `Content-Range: bytes *\/size`): the one with a header of its own. */
export class RangeNotSatisfiableError extends BrokerError {
  constructor(range: string, sizeBytes: number) {
    super('unsatisfiable', 'range_not_satisfiable', `Range ${range} cannot be satisfied: the file is ${sizeBytes} bytes`);
    this.headers = { 'Content-Range': `bytes */${sizeBytes}` };
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
