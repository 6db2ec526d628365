/**
 * The snapshots API's contract (docs/snapshots.md): snapshot a leased session, fork it, put it back
 * to a snapshot of its own, list and delete snapshots. A session started from a snapshot is also an
 * acquire's (`{"snapshot": id}`, poolContract.ts). Errors in the pool's `{detail, code}` format.
 * snapshotRoutes.ts serves these; each body is checked against its schema before anything starts.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { ApiContract, RouteContract } from '../../http/contract';
import { MAX_GROUP_SIZE } from '../../core/pool/groupAcquire';
import { SNAPSHOT_ID_SHAPE, SNAPSHOT_ID_SOURCE } from '../../core/snapshots/snapshotIds';

/** A snapshot id as the broker makes them: a malformed one is a 400, never a lookup. */
export const SNAPSHOT_ID = Type.String({
  pattern: SNAPSHOT_ID_SOURCE,
  description: `a snapshot id (${SNAPSHOT_ID_SHAPE}), as POST /session/{id}/snapshot answered it`,
  'x-refusal': { '*': `'snapshot' must be a snapshot id (${SNAPSHOT_ID_SHAPE}), got {json}` },
});

/** A lifetime asked for, capped by nothing but its type: a snapshot is held no longer than its TTL or its budget allows. */
const TTL = Type.Number({
  exclusiveMinimum: 0,
  maximum: 7 * 24 * 3600,
  description: 'seconds the snapshot lives (default BROKER_SNAPSHOT_TTL)',
  'x-refusal': { '*': "'ttl' must be a number of seconds above 0 and at most 604800, got {json}" },
});

const SECONDS = (description: string) => Type.Number({ exclusiveMinimum: 0, description, 'x-refusal': { '*': "'{field}' must be a positive number of seconds, got {json}" } });

export const SNAPSHOT_BODY = Type.Object({ ttl: Type.Optional(TTL) }, { additionalProperties: false, 'x-refusal': { type: 'Request body must be a JSON object (or empty), got {a}', additionalProperties: "the body has only 'ttl'" } });

export const FORK_BODY = Type.Object(
  {
    n: Type.Integer({ minimum: 1, maximum: MAX_GROUP_SIZE, description: 'sessions to start from the snapshot', 'x-refusal': { '*': `'n' must be an integer from 1 to ${MAX_GROUP_SIZE}, got {json}` } }),
    acquire_timeout: Type.Optional(SECONDS('seconds to wait for the n sessions, at most BROKER_ACQUIRE_TIMEOUT')),
    lease_ttl: Type.Optional(SECONDS("each fork's lease_ttl")),
    ttl: Type.Optional(TTL),
  },
  { additionalProperties: false, 'x-refusal': { type: 'Request body must be a JSON object, got {a}', required: "'n' is required: an integer from 1 to " + MAX_GROUP_SIZE, additionalProperties: "the body has only 'n', 'acquire_timeout', 'lease_ttl' and 'ttl'" } },
);
export type ForkBody = Static<typeof FORK_BODY>;

export const RESTORE_BODY = Type.Object(
  { snapshot: SNAPSHOT_ID },
  { additionalProperties: false, 'x-refusal': { type: 'Request body must be a JSON object, got {a}', required: "'snapshot' is required", additionalProperties: "the body has only 'snapshot'" } },
);

const SNAPSHOT_VIEW = Type.Object({
  snapshot_id: Type.String(),
  pool: Type.String(),
  parent_session: Type.String(),
  parent_snapshot: Type.Union([Type.String(), Type.Null()], { description: 'the snapshot the parent session started from (its layer lies beneath this one)' }),
  depth: Type.Integer({ description: 'layers this snapshot stacks: 1 for a session started from the image' }),
  bytes: Type.Integer({ description: "what its layer holds: the session's own writes and its working directory, never its image" }),
  created_at_ms: Type.Number(),
  age_seconds: Type.Number(),
  expires_at_ms: Type.Number(),
  forks: Type.Integer({ description: 'sessions started from it so far' }),
  live_forks: Type.Array(Type.String(), { description: 'leases that run on its layer now (they hold it: no delete meanwhile)' }),
  cwd: Type.String(),
  background_processes: Type.Array(Type.String(), { description: '`<pid> <name>` of each process but bash that ran at the snapshot: none is carried' }),
});

const FORKED = Type.Object({
  snapshot: SNAPSHOT_VIEW,
  sessions: Type.Array(Type.Object({ session_id: Type.String(), lease_ttl: Type.Optional(Type.Number()), container: Type.Integer() })),
});

const ID = 'f3c1d2e4a5b6978812345678abcdef01';
const SNAP = 'snap-0123456789abcdef';
const VIEW_EXAMPLE = {
  snapshot_id: SNAP,
  pool: 'default',
  parent_session: ID,
  parent_snapshot: null,
  depth: 1,
  bytes: 1048576,
  created_at_ms: 1795623330962,
  age_seconds: 0,
  expires_at_ms: 1795626930962,
  forks: 8,
  live_forks: [],
  cwd: `/tmp/s/${ID}`,
  background_processes: [],
};
const ON_LEASE = {
  400: 'a bad body (`bad_request`), or the lease ended (`session_not_in_use`)',
  404: 'no session of this id was ever leased (`session_not_found`)',
  410: 'its shell or container died: its state is lost (`session_broken`)',
};
const UNSERVED = { 501: 'the session has no view of its own: the local backend, isolation off, or a container that cannot isolate (`snapshots_unsupported`)' };

const routes = {
  snapshot: {
    method: 'POST',
    path: '/session/:sessionId/snapshot',
    summary: "Snapshot a leased session: its own writes and its shell's state (the session goes on)",
    body: { schema: SNAPSHOT_BODY, required: false, example: { ttl: 600 } },
    responses: { 201: { description: 'the snapshot', schema: SNAPSHOT_VIEW, example: { ...VIEW_EXAMPLE, forks: 0 } } },
    errors: {
      ...ON_LEASE,
      409: 'a command runs on the session (`session_busy`: a snapshot is taken between commands), or it started from a chain of snapshots as deep as a view stacks (`snapshot_too_deep`)',
      507: "beyond the node's snapshot budget (`snapshot_budget_exceeded`)",
      ...UNSERVED,
    },
  },
  fork: {
    method: 'POST',
    path: '/session/:sessionId/fork',
    summary: 'Snapshot a leased session and start n sessions from it, all or nothing',
    body: { schema: FORK_BODY, example: { n: 8 } },
    responses: { 200: { description: 'the snapshot and the new leases', schema: FORKED, example: { snapshot: VIEW_EXAMPLE, sessions: [{ session_id: ID, container: 0 }] } } },
    errors: {
      ...ON_LEASE,
      409: 'as for a snapshot (`session_busy`, `snapshot_too_deep`)',
      503: 'n sessions did not become free in time (`pool_exhausted`): no fork and no snapshot are left',
      507: "beyond the node's snapshot budget (`snapshot_budget_exceeded`)",
      ...UNSERVED,
    },
  },
  restore: {
    method: 'POST',
    path: '/session/:sessionId/restore',
    summary: 'Put a leased session back to a snapshot of its own, in place (same id, same working directory)',
    body: { schema: RESTORE_BODY, example: { snapshot: SNAP } },
    responses: { 200: { description: 'the snapshot it runs from now', schema: SNAPSHOT_VIEW, example: { ...VIEW_EXAMPLE, live_forks: [ID] } } },
    errors: {
      ...ON_LEASE,
      403: 'a snapshot of another session (`snapshot_not_own`)',
      409: 'a command runs on the session (`session_busy`)',
      ...UNSERVED,
    },
  },
  list: {
    method: 'GET',
    path: '/snapshots',
    gateway: 'list-snapshots',
    summary: "The node's snapshots, oldest first, with the budget (through a gateway: every node's, the budgets summed)",
    responses: { 200: { description: 'the snapshots', schema: Type.Object({ budget_bytes: Type.Integer(), used_bytes: Type.Integer(), snapshots: Type.Array(SNAPSHOT_VIEW) }) } },
    errors: {},
  },
  remove: {
    method: 'DELETE',
    path: '/snapshots/:snapshotId',
    summary: 'Delete a snapshot (refused while sessions or snapshots lie on its layer)',
    responses: { 200: { description: 'deleted', schema: Type.Object({ status: Type.Literal('deleted') }), example: { status: 'deleted' } } },
    errors: {
      400: 'not a snapshot id (`bad_request`)',
      404: 'no such snapshot (`snapshot_not_found`)',
      409: 'live sessions started from it, or snapshots taken above it, hold its layer (`snapshot_in_use`)',
    },
  },
} satisfies Record<string, RouteContract>;

export const SNAPSHOT_CONTRACT: ApiContract<typeof routes> = {
  tag: 'snapshots',
  description: "Branch an episode: snapshot a leased session's view and shell, start sessions from it, go back to it (docs/snapshots.md).",
  errors: 'pool',
  // A snapshot lives on the node of the session it was taken of, and both ids name that node (docs/snapshots.md).
  gateway: 'id',
  routes,
};
