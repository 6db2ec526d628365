/**
 * The pool API's contract, written once: each route (method, path, body, answers and the errors
 * it answers in the pool's `{detail, code}` format), the rollout additions (acquire_group,
 * heartbeat, history) included. The same objects drive the routes (poolRoutes.ts, rolloutRoutes.ts
 * serve them), the input checks (poolInput.ts through schemaCheck.ts: each field's `x-refusal`
 * words its 400s), the OpenAPI document and the TypeScript types of the inputs and answers (Static).
 *
 * Limits of the configuration (BROKER_MAX_COMMAND_TIMEOUT, BROKER_MAX_COMMAND_BYTES) join the schemas
 * the routes check with; the document shows the schemas without them.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { MAX_GROUP_SIZE } from '../../core/pool/groupAcquire';
import { IMAGE_REF_PATTERN, MAX_IMAGE_REF_CHARS } from '../../core/images/imageRef';
import type { CommandLimits } from '../../core/session/sessionInput';
import { commandSchema, orNull, PATH_KEYS } from '../contractParts';
import { ref } from '../../http/openApiTypes';
import { SNAPSHOT_ID } from '../snapshots/snapshotContract';
import type { ApiContract, RouteContract } from '../../http/contract';
import { NETWORK_ROUTE } from './networkContract';

const REFUSE_NON_OBJECT = 'Request body must be a JSON object, got {a}';

/** An image reference (core/images/imageRef.ts): a malformed, huge or hostile one is a 400 before anything starts. */
export const IMAGE = Type.String({
  minLength: 1,
  maxLength: MAX_IMAGE_REF_CHARS,
  pattern: IMAGE_REF_PATTERN,
  description: "an image reference (registry/repository:tag or @sha256:<64 hex>): a configured pool that runs it, else this image's pool made on demand (docs/images.md)",
  'x-refusal': {
    type: "'image' must be an image reference (a string), got {a}",
    minLength: "'image' must not be empty",
    maxLength: `'image' must be at most ${MAX_IMAGE_REF_CHARS} characters`,
    pattern: "'image' must be an image reference such as registry.local:5000/repo/name:tag or name@sha256:<64 hex>",
  },
});

/** What an acquire by image cost (docs/images.md): where its session came from, and its whole wait. */
export const IMAGE_COST = Type.Object(
  {
    kind: Type.Unsafe<'warm' | 'started' | 'pulled'>({ enum: ['warm', 'started', 'pulled'], description: 'warm: a free session; started: it waited for a container; pulled: it waited for the pull, then a container' }),
    wait_ms: Type.Integer({ description: 'the whole acquire, from its request to its lease' }),
  },
  { additionalProperties: false },
);
/** Printable, up to this long: a UUID, a trace id, an episode and step number. */
export const MAX_REQUEST_ID_CHARS = 200;

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
            propertyNames: PATH_KEYS,
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
      image: Type.Optional(orNull(IMAGE)),
      snapshot: Type.Optional(orNull(SNAPSHOT_ID)),
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
    egress_refused: Type.Optional(nullable(Type.Integer({ description: 'with a network of its own: connections and datagrams its egress policy refused during the command (no route out, or refused by its egress rules)' }))),
    egress_refused_to: Type.Optional(nullable(Type.Array(Type.String(), { description: 'with a network of its own: the first 8 distinct host:port its egress rules refused during the command (null: cannot be read)' }))),
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
    image_cost: Type.Optional(IMAGE_COST),
  },
  { additionalProperties: false },
);
export type Acquired = Static<typeof ACQUIRED>;

/** POST /session/acquire_group's answer: each lease as an acquire's, with its container's index. */
export const GROUP_ACQUIRED = Type.Object(
  { sessions: Type.Array(Type.Object({ ...ACQUIRED.properties, container: Type.Integer() }, { additionalProperties: false })), image_cost: Type.Optional(IMAGE_COST) },
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

const ID = 'f3c1d2e4a5b6978812345678abcdef01';

const ON_LEASE = {
  400: 'the lease ended: released, or reclaimed (`session_not_in_use`, with `reclaimed`)',
  404: 'no session of this id was ever leased (`session_not_found`)',
  410: 'its shell or container died: its state is lost (`session_broken`)',
};
const ACQUIRE_ERRORS = {
  400: 'a bad field: files, startup_commands, request_id, lease_ttl, acquire_timeout, image, or an unknown pool (`bad_request`, `unknown_pool`)',
  403: 'an image this node may not pull (`image_not_allowed`), or its registry refused the node (`registry_denied`)',
  404: 'the registry has no such image (`image_not_found`)',
  409: 'the same request_id with another body (`request_id_conflict`)',
  413: 'the body or a command is too large (`payload_too_large`)',
  422: 'a startup command killed its shell; no session was leased (`startup_failed`)',
  501: 'an image on a backend that runs none (`not_implemented`)',
  503: 'no session became free in time (`pool_exhausted`, with queue_length and Retry-After), shutting down, or an image not ready: its registry unreachable (`registry_unavailable`), its pull or first container still under way (`image_pulling`, `image_starting`), no room for it (`node_full`, `image_disk_full`), all with Retry-After',
  507: 'an image larger than the node\'s image disk budget (`image_too_large`)',
};

const routes = {
  acquire: {
    method: 'POST',
    path: '/session/acquire',
    gateway: 'acquire',
    summary: 'Lease a session',
    description: 'Waits in a FIFO queue for a free session, makes its working directory, writes `files`, runs `startup_commands`.',
    body: { schema: ref('AcquireRequest'), required: false, example: { files: { 'data/in.txt': 'aGVsbG8=' }, startup_commands: ['export GREETING=hi'] } },
    responses: { 200: { description: 'the lease', schema: ref('Acquired'), example: { session_id: ID, startup_results: [{ status: 'Success', stdout: '', stderr: '', return_code: 0 }] } } },
    errors: ACQUIRE_ERRORS,
  },
  acquireGroup: {
    method: 'POST',
    path: '/session/acquire_group',
    gateway: 'acquire',
    summary: 'Lease n sessions, all or none',
    body: {
      schema: acquireGroupBody(),
      example: { n: 2, spread: true },
    },
    responses: {
      200: {
        description: 'the sessions, each with its container',
        schema: GROUP_ACQUIRED,
        example: { sessions: [{ session_id: ID, container: 0 }] },
      },
    },
    errors: { ...ACQUIRE_ERRORS, 400: 'a bad field, or a group the pool could never hold (`bad_request`)' },
  },
  execute: {
    method: 'POST',
    path: '/session/:sessionId/execute',
    summary: 'Run a command in the session (and, with `release`, release it)',
    body: {
      schema: executeBody(),
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
  release: {
    method: 'POST',
    path: '/session/:sessionId/release',
    summary: 'Release the session (instant, idempotent)',
    body: { schema: {}, required: false, description: 'any JSON, ignored' },
    responses: { 200: { description: 'released', schema: RELEASED, example: { status: 'released' } } },
    errors: { 404: ON_LEASE[404] },
  },
  heartbeat: {
    method: 'POST',
    path: '/session/:sessionId/heartbeat',
    summary: 'Renew the lease (its idle timeout and lease_ttl)',
    body: { schema: {}, required: false, description: 'any JSON, ignored' },
    responses: { 200: { description: 'alive', schema: ALIVE, example: { status: 'alive', lease_ttl: 30 } } },
    errors: ON_LEASE,
  },
  history: {
    method: 'GET',
    path: '/session/:sessionId/history',
    summary: "The lease's executes in order (a call on the lease)",
    responses: {
      200: {
        description: 'the journal; `dropped` counts entries older than the kept ones',
        schema: HISTORY,
        example: { session_id: ID, entries: [], dropped: 0 },
      },
    },
    errors: ON_LEASE,
  },
  network: NETWORK_ROUTE,
} satisfies Record<string, RouteContract>;

export const POOL_CONTRACT: ApiContract<typeof routes> = {
  tag: 'pool',
  description: 'The pool API: lease a warm bash session, run commands in it, release it; and the additions for rollout clients.',
  errors: 'pool',
  // A lease's calls go to the node its session id names.
  gateway: 'id',
  pathParams: { sessionId: { description: 'the session_id an acquire answered', example: ID } },
  schemas: { ExecuteResult: EXECUTE_RESULT, AcquireRequest: acquireBody(), Acquired: ACQUIRED, JournalEntry: JOURNAL_ENTRY },
  routes,
};
