/** Task sandboxes (taskRoutes.ts), Core's API for them, for /openapi.json. */
import { INTEGER, object, ref, STRING, type ApiDoc, type ReplyDoc, type Schema } from '../../http/openApiTypes';

const ID = 'task-5f0c2d1e';
const RECORD: Schema = object({
  id: STRING,
  name: STRING,
  repo: STRING,
  status: { enum: ['starting', 'running', 'terminated'] },
  created_at: { type: 'string', format: 'date-time' },
  cursors: object({ control: INTEGER, coding: INTEGER }),
  timings: object({ container_start_ms: { type: 'number' }, daemon_ready_ms: { type: 'number' } }),
});
const UNKNOWN = { 404: 'no such task sandbox (`not_found`)', 501: 'task sandboxes need the docker backend (`tasks_not_available`)' };
const STREAM: Record<string, ReplyDoc> = {
  200: {
    description: 'server-sent events, `id: <cursor>` and `data: {"cursor": N, "event": {...}}`; ends after the sandbox\'s last event',
    contentType: 'text/event-stream',
    schema: STRING,
    example: 'id: 1\ndata: {"cursor":1,"event":{"type":"sandbox_ready","timestamp":1795623330962}}\n\n',
  },
};
const CURSOR = [
  { name: 'cursor', in: 'query' as const, description: 'resume after this cursor (wins over Last-Event-ID)', schema: { type: 'integer', minimum: 0 } },
  { name: 'Last-Event-ID', in: 'header' as const, description: 'resume after this cursor', schema: { type: 'integer', minimum: 0 } },
];
const FORWARDED: ReplyDoc = { description: "accepted: the task daemon's own answer", schema: {} };

export const TASK_API_DOC: ApiDoc = {
  tag: 'task sandboxes',
  description: 'Task sandboxes: a sandbox with a coding agent working on a repository; its lifecycle and coding events as resumable SSE streams.',
  errors: 'pool',
  pathParams: { id: { description: 'a task sandbox id', example: ID } },
  schemas: { TaskRecord: RECORD },
  operations: {
    'POST /sandboxes': {
      summary: 'Create a task sandbox (answers once it is usable)',
      body: { schema: { type: 'object', properties: { name: STRING, repo: { type: 'string', pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$' }, prompt: STRING }, required: ['repo'], additionalProperties: false }, example: { repo: 'org/project', prompt: 'fix the failing test' } },
      responses: { 201: { description: 'its record', schema: ref('TaskRecord') } },
      errors: { 400: 'a bad field (`bad_request`)', 501: UNKNOWN[501] },
    },
    'GET /sandboxes/:id': { summary: 'Its record', responses: { 200: { description: 'the record', schema: ref('TaskRecord') } }, errors: UNKNOWN },
    'DELETE /sandboxes/:id': { summary: 'End it (its streams end with sandbox_terminated)', responses: { 200: { description: 'its record, terminated', schema: ref('TaskRecord') } }, errors: UNKNOWN },
    'POST /sandboxes/:id/prompt': {
      summary: 'Send the agent a message',
      body: { schema: object({ message: STRING }), example: { message: 'now run the tests' } },
      responses: { 202: FORWARDED },
      errors: { ...UNKNOWN, 400: "'message' must be a non-empty string (`bad_request`)" },
    },
    'POST /sandboxes/:id/abort': { summary: "Abort the agent's current turn", responses: { 202: FORWARDED }, errors: UNKNOWN },
    'GET /sandboxes/:id/stream/control': { summary: 'Lifecycle events (SSE, resumable)', params: CURSOR, responses: STREAM, errors: { ...UNKNOWN, 400: 'a bad cursor (`bad_request`)' } },
    'GET /sandboxes/:id/stream/coding': { summary: "The agent's events (SSE, resumable)", params: CURSOR, responses: STREAM, errors: { ...UNKNOWN, 400: 'a bad cursor (`bad_request`)' } },
  },
};
