/**
 * OpenSandbox's snapshot routes of the lifecycle API (/v1), written once: take a snapshot of a
 * sandbox, list, get and delete snapshots. A sandbox's snapshot is its session's, in the node's one
 * snapshot store (docs/snapshots.md); a create with `snapshotId` restores one (createRequest.ts).
 * Errors in OpenSandbox's `{code, message}` envelope. lifecycleSnapshotRoutes.ts serves these.
 */
import { Type } from '@sinclair/typebox';
import { arrayOf, BOOLEAN, INTEGER, object, ref, STRING, type Schema } from '../../http/openApiTypes';
import type { RouteContract } from '../../http/contract';

const AT: Schema = { type: 'string', format: 'date-time' };

/** OpenSandbox's SnapshotState: a snapshot is taken and deleted before the answer, so it is `Ready` while it exists. */
export const SNAPSHOT_STATES: readonly string[] = ['Creating', 'Deleting', 'Ready', 'Failed'];

export const SNAPSHOT: Schema = {
  type: 'object',
  properties: {
    id: STRING,
    sandboxId: { type: 'string', description: 'the sandbox it was taken of (a pool lease: its session id)' },
    name: STRING,
    status: {
      type: 'object',
      properties: { state: { enum: [...SNAPSHOT_STATES] }, reason: STRING, message: STRING, lastTransitionAt: AT },
      required: ['state'],
      additionalProperties: false,
    },
    createdAt: AT,
  },
  required: ['id', 'sandboxId', 'status', 'createdAt'],
  additionalProperties: false,
};

/** CreateSnapshotRequest: `{}` or `{"name"}`, nothing else. */
export const CREATE_SNAPSHOT_BODY = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'a name of your own', 'x-no-nul': true, 'x-refusal': { '*': 'name must be a non-empty string of at most 256 characters, got {json}' } })) },
  { additionalProperties: false, 'x-refusal': { type: 'The request body must be a JSON object (or empty)', additionalProperties: 'CreateSnapshotRequest has only name' } },
);

/** A list's `page` and `pageSize` (the sandboxes' and the snapshots'). */
export const PAGING_PARAMS = [
  { name: 'page', in: 'query', description: 'from 1', schema: { type: 'integer', minimum: 1 } },
  { name: 'pageSize', in: 'query', description: '1 to 1000, default 20', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
] as const;

/** A list's answer: one page of `item`s (ListSandboxesResponse, ListSnapshotsResponse). */
export function pageOf(item: string, example: unknown[]): { description: string; schema: Schema; example: unknown } {
  const totalItems = example.length;
  return {
    description: 'one page',
    schema: object({ items: arrayOf(ref(item)), pagination: object({ page: INTEGER, pageSize: INTEGER, totalItems: INTEGER, totalPages: INTEGER, hasNextPage: BOOLEAN }) }),
    example: { items: example, pagination: { page: 1, pageSize: 20, totalItems, totalPages: Math.ceil(totalItems / 20), hasNextPage: false } },
  };
}

const SNAPSHOT_ERRORS = { 404: 'no such snapshot (`NOT_FOUND`)', 501: 'snapshots are not served: the local backend, or per-lease isolation off (`NOT_SUPPORTED`)' };
const EXAMPLE = { id: 'snap-0123456789abcdef', sandboxId: '5b7c0ffee0c0ffee0c0ffee0c0ffee01', name: 'before-import', status: { state: 'Ready', reason: 'snapshot_ready', message: 'snapshot is ready', lastTransitionAt: '2026-01-01T00:00:00.000Z' }, createdAt: '2026-01-01T00:00:00.000Z' };

export const LIFECYCLE_SNAPSHOT_ROUTES = {
  createSnapshot: {
    method: 'POST',
    path: '/v1/sandboxes/:id/snapshots',
    summary: "Snapshot a sandbox: its session's files and shell, taken before the answer (the sandbox goes on)",
    body: { schema: CREATE_SNAPSHOT_BODY, required: false, example: { name: 'before-import' } },
    responses: { 202: { description: 'the snapshot, Ready; Location: its URL', schema: ref('Snapshot'), example: EXAMPLE } },
    errors: {
      400: 'a bad body (`INVALID_REQUEST_BODY`)',
      404: 'no such sandbox (`NOT_FOUND`)',
      409: 'the sandbox is not Running, changing state, or a command runs in its lease shell (`RUNTIME_ERROR`)',
      501: 'a sandbox that is a whole container or a container of its own, the local backend, isolation off (`NOT_SUPPORTED`)',
      507: "beyond the node's snapshot budget (`RUNTIME_ERROR`)",
    },
  },
  listSnapshots: {
    method: 'GET',
    path: '/v1/snapshots',
    gateway: 'list-lifecycle-snapshots',
    summary: "The node's snapshots, oldest first, filtered and paged",
    params: [
      { name: 'sandboxId', in: 'query', description: 'the sandbox they were taken of', schema: STRING },
      { name: 'name', in: 'query', description: 'their name, exactly', schema: STRING },
      { name: 'state', in: 'query', description: 'repeat for several', schema: { enum: [...SNAPSHOT_STATES] } },
      ...PAGING_PARAMS,
    ],
    responses: { 200: pageOf('Snapshot', [EXAMPLE]) },
    errors: { 400: 'a bad filter or page (`INVALID_REQUEST_BODY`)', 501: SNAPSHOT_ERRORS[501] },
  },
  getSnapshot: {
    method: 'GET',
    path: '/v1/snapshots/:snapshotId',
    summary: 'A snapshot',
    responses: { 200: { description: 'the snapshot', schema: ref('Snapshot'), example: EXAMPLE } },
    errors: SNAPSHOT_ERRORS,
  },
  deleteSnapshot: {
    method: 'DELETE',
    path: '/v1/snapshots/:snapshotId',
    summary: 'Delete a snapshot (refused while a sandbox, a session or a snapshot lies on its layer)',
    responses: { 204: { description: 'deleted' } },
    errors: { ...SNAPSHOT_ERRORS, 409: 'sandboxes or sessions restored from it, or snapshots taken above it, hold its layer (`RUNTIME_ERROR`)' },
  },
} satisfies Record<string, RouteContract>;
