/**
 * The broker's error hierarchy. Core and backends throw these; the HTTP layer maps `status` and
 * `code` to a response in one place (api/errorHandler.ts). `detail` is what the client reads.
 */
export class BrokerError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(detail);
    this.name = new.target.name;
  }
  get detail(): string {
    return this.message;
  }
}

/** A malformed request: bad JSON, wrong types, forbidden paths. Nothing was changed. */
export class BadRequestError extends BrokerError {
  constructor(detail: string) {
    super(400, 'bad_request', detail);
  }
}

export class PayloadTooLargeError extends BrokerError {
  constructor(detail: string) {
    super(413, 'payload_too_large', detail);
  }
}

export class SessionNotFoundError extends BrokerError {
  constructor(sessionId: string) {
    super(404, 'session_not_found', `Session not found: ${sessionId}`);
  }
}

/** The id is known but its lease has ended (released or reclaimed): the spec's 400. */
export class SessionNotInUseError extends BrokerError {
  constructor(sessionId: string, why = 'already released') {
    super(400, 'session_not_in_use', `Session not in use: ${sessionId} (${why})`);
  }
}

/** Another execute is running on the same session; we refuse rather than mix output. */
export class SessionBusyError extends BrokerError {
  constructor(sessionId: string) {
    super(409, 'session_busy', `Session ${sessionId} is already executing a command; wait for it to finish`);
  }
}

/** The lease's shell died or could not be recovered. The client must acquire a new session. */
export class SessionBrokenError extends BrokerError {
  constructor(sessionId: string, reason: string) {
    super(410, 'session_broken', `Session ${sessionId} is broken (${reason}); its state is lost, acquire a new session`);
  }
}

export class PoolExhaustedError extends BrokerError {
  /** The message is the spec's, in seconds: `timeoutMs` 120000 reads "within 120 seconds". */
  constructor(timeoutMs: number) {
    super(503, 'pool_exhausted', `No session available within ${timeoutMs / 1000} seconds`);
  }
}

/** Acquire: the sessions it got kept failing while being prepared (dying shells or containers). */
export class SessionUnavailableError extends BrokerError {
  constructor(attempts: number, lastError: string) {
    super(503, 'session_unavailable', `No healthy session could be prepared (${attempts} tried; last error: ${lastError}); retry later`);
  }
}

export class ShuttingDownError extends BrokerError {
  constructor() {
    super(503, 'shutting_down', 'Broker is shutting down and takes no new sessions');
  }
}

/**
 * A backend was asked for something it does not offer (a PTY session, say). A domain error: the
 * request was well formed, this backend just cannot serve it. Answered 400, as before it had a class.
 */
export class NotSupportedError extends BrokerError {
  constructor(detail: string) {
    super(400, 'not_supported', detail);
  }
}

/** A backend failed in a way the client cannot fix (container gone, engine unreachable). */
export class BackendError extends BrokerError {
  constructor(detail: string) {
    super(502, 'backend_error', detail);
  }
}

/** The caller gave up (client disconnected) before the operation finished. */
export class AbortedError extends BrokerError {
  constructor(what: string) {
    super(499, 'aborted', `${what} aborted by the client`);
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
