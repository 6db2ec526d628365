/** The pool API's description (spec 003 and the rollout additions: poolRoutes.ts, rolloutRoutes.ts) for /openapi.json. */
import { arrayOf, BOOLEAN, described, INTEGER, NUMBER, nullable, object, ref, STRING, type ApiDoc, type Schema } from '../../http/openApiTypes';

const ID = 'f3c1d2e4a5b6978812345678abcdef01';
const REQUEST_ID: Schema = { type: 'string', minLength: 1, maxLength: 200, description: 'Retry-safe call id: a retry with the same id gets the first call\'s answer' };

const EXECUTE_RESULT: Schema = {
  type: 'object',
  description:
    "Spec 003's four fields (`truncated: true` when output was cut); with `facts`, the termination facts after them (null where the host cannot tell); with `release`, `released: true` last.",
  properties: {
    status: { enum: ['Success', 'Failed'] },
    stdout: STRING,
    stderr: STRING,
    return_code: INTEGER,
    truncated: BOOLEAN,
    timed_out: BOOLEAN,
    interrupted: BOOLEAN,
    signal: nullable(STRING),
    oom_killed: nullable(BOOLEAN),
    duration_ms: NUMBER,
    cpu_ms: nullable(NUMBER),
    max_rss_kb: nullable(NUMBER),
    truncated_bytes: object({ stdout: INTEGER, stderr: INTEGER }),
    released: described({ const: true }, 'the execute asked for `release`: the lease is over, as after a release call'),
  },
  required: ['status', 'stdout', 'stderr', 'return_code'],
  additionalProperties: false,
};

const ACQUIRE_BODY: Schema = {
  type: 'object',
  properties: {
    files: { type: 'object', additionalProperties: { type: 'string', contentEncoding: 'base64' }, description: 'relative path -> base64 content, written into the working directory' },
    startup_commands: arrayOf(STRING),
    request_id: REQUEST_ID,
    lease_ttl: described({ type: 'number', exclusiveMinimum: 0 }, 'seconds without a call after which the lease is reclaimed (capped by BROKER_MAX_LEASE_TTL)'),
    acquire_timeout: described({ type: 'number', exclusiveMinimum: 0 }, 'seconds to wait for a session, at most BROKER_ACQUIRE_TIMEOUT'),
    pool: described({ type: 'string', minLength: 1 }, 'a named pool of BROKER_POOLS; absent: the default pool'),
  },
};

const ACQUIRED: Schema = {
  type: 'object',
  properties: { session_id: STRING, startup_results: arrayOf(ref('ExecuteResult')), lease_ttl: NUMBER },
  required: ['session_id'],
  additionalProperties: false,
};

const JOURNAL_ENTRY = object({
  seq: INTEGER,
  request_id: nullable(STRING),
  command: STRING,
  started_at_ms: NUMBER,
  duration_ms: NUMBER,
  return_code: nullable(INTEGER),
  timed_out: BOOLEAN,
  signal: nullable(STRING),
  stdout_head: STRING,
  stdout_tail: STRING,
  stderr_head: STRING,
  stderr_tail: STRING,
  stdout_chars: INTEGER,
  stderr_chars: INTEGER,
  error: nullable(STRING),
});

const ON_LEASE = {
  400: 'the lease ended: released, or reclaimed (`session_not_in_use`, with `reclaimed`)',
  404: 'no session of this id was ever leased (`session_not_found`)',
  410: 'its shell or container died: its state is lost (`session_broken`)',
};
const ACQUIRE_ERRORS = {
  400: 'a bad field: files, startup_commands, request_id, lease_ttl, acquire_timeout, or an unknown pool (`bad_request`, `unknown_pool`)',
  409: 'the same request_id with another body (`request_id_conflict`)',
  413: 'the body or a command is too large (`payload_too_large`)',
  422: 'a startup command killed its shell; no session was leased (`startup_failed`)',
  503: 'no session became free in time (`pool_exhausted`, with queue_length and Retry-After), or shutting down',
};

export const POOL_API_DOC: ApiDoc = {
  tag: 'pool',
  description: 'Spec 003: lease a warm bash session, run commands in it, release it; and the additions for rollout clients.',
  errors: 'pool',
  pathParams: { sessionId: { description: 'the session_id an acquire answered', example: ID } },
  schemas: { ExecuteResult: EXECUTE_RESULT, AcquireRequest: ACQUIRE_BODY, Acquired: ACQUIRED, JournalEntry: JOURNAL_ENTRY },
  operations: {
    'POST /session/acquire': {
      summary: 'Lease a session',
      description: 'Waits in a FIFO queue for a free session, makes its working directory, writes `files`, runs `startup_commands`.',
      body: { schema: ref('AcquireRequest'), required: false, example: { files: { 'data/in.txt': 'aGVsbG8=' }, startup_commands: ['export GREETING=hi'] } },
      responses: { 200: { description: 'the lease', schema: ref('Acquired'), example: { session_id: ID, startup_results: [{ status: 'Success', stdout: '', stderr: '', return_code: 0 }] } } },
      errors: ACQUIRE_ERRORS,
    },
    'POST /session/acquire_group': {
      summary: 'Lease n sessions, all or none',
      body: {
        schema: { ...ACQUIRE_BODY, properties: { ...(ACQUIRE_BODY.properties as object), n: { type: 'integer', minimum: 1, maximum: 1024 }, spread: BOOLEAN }, required: ['n'] },
        example: { n: 2, spread: true },
      },
      responses: {
        200: {
          description: 'the sessions, each with its container',
          schema: object({ sessions: arrayOf({ ...ACQUIRED, properties: { ...(ACQUIRED.properties as object), container: INTEGER }, required: ['session_id', 'container'] }) }),
          example: { sessions: [{ session_id: ID, container: 0 }] },
        },
      },
      errors: { ...ACQUIRE_ERRORS, 400: 'a bad field, or a group the pool could never hold (`bad_request`)' },
    },
    'POST /session/:sessionId/execute': {
      summary: 'Run a command in the session (and, with `release`, release it)',
      body: {
        schema: {
          type: 'object',
          properties: {
            command: STRING,
            timeout: described({ type: 'number', exclusiveMinimum: 0 }, 'seconds, default 30'),
            request_id: REQUEST_ID,
            facts: BOOLEAN,
            release: described(BOOLEAN, 'true: release the lease once the command ran (also after a 410), before answering: an episode\'s last command and its release in one request'),
          },
          required: ['command'],
        },
        example: { command: 'echo hi', timeout: 5 },
      },
      responses: { 200: { description: 'its result (a timeout is `Failed` with return_code -1)', schema: ref('ExecuteResult'), example: { status: 'Success', stdout: 'hi\n', stderr: '', return_code: 0 } } },
      errors: {
        ...ON_LEASE,
        400: 'a bad command or timeout (`bad_request`), or the lease ended (`session_not_in_use`)',
        409: 'another execute runs on the session (`session_busy`), or a request_id conflict',
        413: 'the command is too large (`payload_too_large`)',
        503: 'shutting down (`shutting_down`)',
      },
    },
    'POST /session/:sessionId/release': {
      summary: 'Release the session (instant, idempotent)',
      body: { schema: {}, required: false, description: 'any JSON, ignored' },
      responses: { 200: { description: 'released', schema: object({ status: { const: 'released' } }), example: { status: 'released' } } },
      errors: { 404: ON_LEASE[404] },
    },
    'POST /session/:sessionId/heartbeat': {
      summary: 'Renew the lease (its idle timeout and lease_ttl)',
      body: { schema: {}, required: false, description: 'any JSON, ignored' },
      responses: { 200: { description: 'alive', schema: object({ status: { const: 'alive' }, lease_ttl: nullable(NUMBER) }), example: { status: 'alive', lease_ttl: 30 } } },
      errors: ON_LEASE,
    },
    'GET /session/:sessionId/history': {
      summary: "The lease's executes in order (a call on the lease)",
      responses: {
        200: {
          description: 'the journal; `dropped` counts entries older than the kept ones',
          schema: object({ session_id: STRING, entries: arrayOf(ref('JournalEntry')), dropped: INTEGER }),
          example: { session_id: ID, entries: [], dropped: 0 },
        },
      },
      errors: ON_LEASE,
    },
  },
};
