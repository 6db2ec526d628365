/**
 * The pool API's contract, written once: each route's body and answer as JSON Schema (TypeBox),
 * the rollout additions (acquire_group, heartbeat, history) included.
 * The same objects drive the input checks (poolInput.ts through schemaCheck.ts: each field's
 * `x-refusal` words its 400s), the OpenAPI document (poolRoutes.openapi.ts) and the TypeScript types
 * of the inputs and answers (Static).
 *
 * Limits of the configuration (BROKER_MAX_COMMAND_TIMEOUT, BROKER_MAX_COMMAND_BYTES) join the schemas
 * the routes check with; the document shows the schemas without them.
 */
import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { MAX_GROUP_SIZE } from '../../core/pool/groupAcquire';
import type { CommandLimits } from '../../core/session/sessionInput';

/** A field that may also be sent as null, which means absent. */
function orNull<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] });
}

const REFUSE_NON_OBJECT = 'Request body must be a JSON object, got {a}';
const NO_NUL = '^[^\\u0000]*$';
/** Printable, up to this long: a UUID, a trace id, an episode and step number. */
export const MAX_REQUEST_ID_CHARS = 200;

/** A shell command: a string without NUL bytes, at most BROKER_MAX_COMMAND_BYTES (a 413 beyond). */
function commandSchema(limits?: CommandLimits) {
  return Type.String({
    pattern: NO_NUL,
    ...(limits ? { 'x-max-bytes': limits.maxCommandBytes } : {}),
    'x-refusal': {
      type: "'{field}' must be a string, got {a}",
      pattern: "'{field}' must not contain NUL bytes",
      'x-max-bytes': "'{field}' is longer than {limit} bytes (BROKER_MAX_COMMAND_BYTES); send large scripts as files",
    },
  });
}

const REQUEST_ID = orNull(
  Type.String({
    minLength: 1,
    maxLength: MAX_REQUEST_ID_CHARS,
    pattern: '^[^\\u0000-\\u001f\\u007f]*$',
    description: "Retry-safe call id: a retry with the same id gets the first call's answer",
    'x-refusal': { '*': `'request_id' must be a string of 1 to ${MAX_REQUEST_ID_CHARS} printable characters` },
  }),
);

function flag(description?: string) {
  return orNull(Type.Boolean({ ...(description ? { description } : {}), 'x-refusal': { '*': "'{field}' must be true or false, got {json}" } }));
}

function positiveSeconds(description: string) {
  return orNull(Type.Number({ exclusiveMinimum: 0, description, 'x-refusal': { '*': "'{field}' must be a positive number of seconds, got {json}" } }));
}

/** POST /session/:sessionId/execute */
export function executeBody(limits?: CommandLimits) {
  return Type.Object(
    {
      command: commandSchema(limits),
      timeout: Type.Optional(
        orNull(
          Type.Number({
            exclusiveMinimum: 0,
            ...(limits ? { maximum: limits.maxTimeoutSeconds } : {}),
            description: 'seconds, default 30, at most BROKER_MAX_COMMAND_TIMEOUT',
            'x-refusal': {
              type: "'timeout' must be a number of seconds, got {a}",
              exclusiveMinimum: "'timeout' must be positive, got {value}",
              maximum: "'timeout' must be at most {limit} seconds (BROKER_MAX_COMMAND_TIMEOUT), got {value}",
            },
          }),
        ),
      ),
      request_id: Type.Optional(REQUEST_ID),
      facts: Type.Optional(flag()),
      release: Type.Optional(flag("true: release the lease once the command ran (also after a 410), before answering: an episode's last command and its release in one request")),
    },
    { 'x-refusal': { type: REFUSE_NON_OBJECT, required: "'{missing}' is required" } },
  );
}
export type ExecuteBody = Static<ReturnType<typeof executeBody>>;

/** POST /session/acquire (an empty body is `{}`); acquire_group adds its own fields. */
export function acquireBody(limits?: CommandLimits) {
  return Type.Object(
    {
      files: Type.Optional(
        orNull(
          // A map by additionalProperties (not TypeBox's Record, a patternProperties), as OpenAPI tools read maps.
          Type.Unsafe<Record<string, string>>({
            type: 'object',
            additionalProperties: { type: 'string', contentEncoding: 'base64' },
            description: 'relative path -> base64 content, written into the working directory',
            // poolInput.ts: each path stays inside the working directory, each content is base64.
            'x-workdir-files': true,
            'x-refusal': { type: "'files' must be an object of relative path -> base64 content, got {a}" },
          }),
        ),
      ),
      startup_commands: Type.Optional(orNull(Type.Array(commandSchema(limits), { 'x-refusal': { type: "'startup_commands' must be a list of strings, got {a}" } }))),
      request_id: Type.Optional(REQUEST_ID),
      lease_ttl: Type.Optional(positiveSeconds('seconds without a call after which the lease is reclaimed (capped by BROKER_MAX_LEASE_TTL)')),
      acquire_timeout: Type.Optional(positiveSeconds('seconds to wait for a session, at most BROKER_ACQUIRE_TIMEOUT')),
      pool: Type.Optional(
        orNull(
          Type.String({
            minLength: 1,
            description: 'a named pool of BROKER_POOLS; absent: the default pool',
            'x-refusal': { '*': "'pool' must be a pool name (a non-empty string), got {a}" },
          }),
        ),
      ),
    },
    { 'x-refusal': { type: 'Request body must be a JSON object (or empty), got {a}' } },
  );
}
export type AcquireBody = Static<ReturnType<typeof acquireBody>>;

const GROUP_SIZE_REFUSAL = `'n' is required: an integer from 1 to ${MAX_GROUP_SIZE}, got`;

/** POST /session/acquire_group's own fields, checked after the acquire's (its body is an acquire's and these). */
export const GROUP_SIZE = Type.Object(
  {
    n: Type.Integer({ minimum: 1, maximum: MAX_GROUP_SIZE, 'x-refusal': { '*': `${GROUP_SIZE_REFUSAL} {json}` } }),
    spread: Type.Optional(flag()),
  },
  { 'x-refusal': { required: `${GROUP_SIZE_REFUSAL} undefined` } },
);

/** The whole body of POST /session/acquire_group, for the document. */
export function acquireGroupBody() {
  return Type.Object({ ...acquireBody().properties, ...GROUP_SIZE.properties });
}

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const EXECUTE_RESULT = Type.Object(
  {
    status: Type.Unsafe<'Success' | 'Failed'>({ enum: ['Success', 'Failed'] }),
    stdout: Type.String(),
    stderr: Type.String(),
    return_code: Type.Integer(),
    truncated: Type.Optional(Type.Boolean()),
    timed_out: Type.Optional(Type.Boolean()),
    interrupted: Type.Optional(Type.Boolean()),
    signal: Type.Optional(nullable(Type.String())),
    oom_killed: Type.Optional(nullable(Type.Boolean())),
    duration_ms: Type.Optional(Type.Number()),
    cpu_ms: Type.Optional(nullable(Type.Number())),
    max_rss_kb: Type.Optional(nullable(Type.Number())),
    disk_full: Type.Optional(nullable(Type.Boolean({ description: "with per-lease isolation: the session's private disk was full at the command's end (its writes failed with ENOSPC)" }))),
    truncated_bytes: Type.Optional(Type.Object({ stdout: Type.Integer(), stderr: Type.Integer() }, { additionalProperties: false })),
    released: Type.Optional(Type.Literal(true, { description: 'the execute asked for `release`: the lease is over, as after a release call' })),
  },
  {
    additionalProperties: false,
    description:
      "The pool API's four fields (`truncated: true` when output was cut); with `facts`, the termination facts after them (null where the host cannot tell); with `release`, `released: true` last.",
  },
);
export type ExecuteResult = Static<typeof EXECUTE_RESULT>;

export const ACQUIRED = Type.Object(
  {
    session_id: Type.String(),
    // The document's shared ExecuteResult, by reference.
    startup_results: Type.Optional(Type.Array(Type.Unsafe<ExecuteResult>({ $ref: '#/components/schemas/ExecuteResult' }))),
    lease_ttl: Type.Optional(Type.Number()),
  },
  { additionalProperties: false },
);
export type Acquired = Static<typeof ACQUIRED>;

/** POST /session/acquire_group's answer: each lease as an acquire's, with its container's index. */
export const GROUP_ACQUIRED = Type.Object(
  { sessions: Type.Array(Type.Object({ ...ACQUIRED.properties, container: Type.Integer() }, { additionalProperties: false })) },
  { additionalProperties: false },
);
export type GroupAcquired = Static<typeof GROUP_ACQUIRED>;

export const RELEASED = Type.Object({ status: Type.Literal('released') }, { additionalProperties: false });
export type Released = Static<typeof RELEASED>;

/** POST /session/:sessionId/heartbeat's answer. */
export const ALIVE = Type.Object({ status: Type.Literal('alive'), lease_ttl: nullable(Type.Number()) }, { additionalProperties: false });
export type Alive = Static<typeof ALIVE>;

/** One execute of a lease's journal (core/pool/leaseJournal.ts keeps them in this shape). */
export const JOURNAL_ENTRY = Type.Object(
  {
    seq: Type.Integer(),
    request_id: nullable(Type.String()),
    command: Type.String(),
    started_at_ms: Type.Number(),
    duration_ms: Type.Number(),
    return_code: nullable(Type.Integer()),
    timed_out: Type.Boolean(),
    signal: nullable(Type.String()),
    stdout_head: Type.String(),
    stdout_tail: Type.String(),
    stderr_head: Type.String(),
    stderr_tail: Type.String(),
    stdout_chars: Type.Integer(),
    stderr_chars: Type.Integer(),
    error: nullable(Type.String()),
  },
  { additionalProperties: false },
);

/** GET /session/:sessionId/history's answer. */
export const HISTORY = Type.Object(
  {
    session_id: Type.String(),
    entries: Type.Array(Type.Unsafe<Static<typeof JOURNAL_ENTRY>>({ $ref: '#/components/schemas/JournalEntry' })),
    dropped: Type.Integer(),
  },
  { additionalProperties: false },
);
export type History = Static<typeof HISTORY>;
