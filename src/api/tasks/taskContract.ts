/**
 * Task sandboxes, Core's API for them: each route's contract written once, with its inputs, answers
 * and the errors it answers in the pool's `{detail, code}` format. taskRoutes.ts serves these, the
 * bodies are checked against them (taskInput.ts), and /openapi.json shows them.
 */
import { Type } from '@sinclair/typebox';
import { INTEGER, object, ref, STRING, type ReplyDoc, type Schema } from '../../http/openApiTypes';
import type { ApiContract, RouteContract } from '../../http/contract';

const MAX_PROMPT_CHARS = 100_000;
const MAX_NAME_CHARS = 100;
const NOT_AN_OBJECT = 'Request body must be a JSON object';

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

/** A non-blank string of at most `max` characters (as JavaScript counts them). */
function text(max: number) {
  return Type.String({ 'x-not-blank': true, 'x-max-length': max, 'x-refusal': { type: "'{field}' must be a non-empty string", 'x-not-blank': "'{field}' must be a non-empty string", 'x-max-length': "'{field}' is over {limit} characters" } });
}

const REPO_REFUSAL = `'repo' must be "org/name" (letters, digits, '_', '.', '-'), got`;

/** POST /sandboxes: `x-task-fields` refuses the first unknown field before anything else; then repo, name, prompt in that order. */
export const CREATE_TASK_BODY = Type.Object(
  {
    repo: Type.String({ pattern: '^(?!.*\\.\\.)[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$', 'x-refusal': { '*': `${REPO_REFUSAL} {json}` } }),
    name: Type.Optional(text(MAX_NAME_CHARS)),
    prompt: Type.Optional(text(MAX_PROMPT_CHARS)),
  },
  { additionalProperties: false, 'x-task-fields': true, 'x-refusal': { type: NOT_AN_OBJECT, required: `${REPO_REFUSAL} null` } },
);

/** POST /sandboxes/{id}/prompt. */
export const PROMPT_BODY = Type.Object({ message: text(MAX_PROMPT_CHARS) }, { 'x-refusal': { type: NOT_AN_OBJECT, required: "'message' must be a non-empty string" } });

const routes = {
  create: {
    method: 'POST',
    path: '/sandboxes',
    gateway: 'create',
    summary: 'Create a task sandbox (answers once it is usable)',
    body: { schema: CREATE_TASK_BODY, example: { repo: 'org/project', prompt: 'fix the failing test' } },
    responses: { 201: { description: 'its record', schema: ref('TaskRecord') } },
    errors: { 400: 'a bad field (`bad_request`)', 501: UNKNOWN[501] },
  },
  get: { method: 'GET', path: '/sandboxes/:id', summary: 'Its record', responses: { 200: { description: 'the record', schema: ref('TaskRecord') } }, errors: UNKNOWN },
  remove: { method: 'DELETE', path: '/sandboxes/:id', summary: 'End it (its streams end with sandbox_terminated)', responses: { 200: { description: 'its record, terminated', schema: ref('TaskRecord') } }, errors: UNKNOWN },
  prompt: {
    method: 'POST',
    path: '/sandboxes/:id/prompt',
    summary: 'Send the agent a message',
    body: { schema: PROMPT_BODY, example: { message: 'now run the tests' } },
    responses: { 202: FORWARDED },
    errors: { ...UNKNOWN, 400: "'message' must be a non-empty string (`bad_request`)" },
  },
  abort: { method: 'POST', path: '/sandboxes/:id/abort', summary: "Abort the agent's current turn", responses: { 202: FORWARDED }, errors: UNKNOWN },
  controlStream: { method: 'GET', path: '/sandboxes/:id/stream/control', summary: 'Lifecycle events (SSE, resumable)', params: CURSOR, responses: STREAM, errors: { ...UNKNOWN, 400: 'a bad cursor (`bad_request`)' } },
  codingStream: { method: 'GET', path: '/sandboxes/:id/stream/coding', summary: "The agent's events (SSE, resumable)", params: CURSOR, responses: STREAM, errors: { ...UNKNOWN, 400: 'a bad cursor (`bad_request`)' } },
} satisfies Record<string, RouteContract>;

export const TASK_CONTRACT: ApiContract<typeof routes> = {
  tag: 'task sandboxes',
  description: 'Task sandboxes: a sandbox with a coding agent working on a repository; its lifecycle and coding events as resumable SSE streams.',
  errors: 'pool',
  gateway: 'id',
  pathParams: { id: { description: 'a task sandbox id', example: ID } },
  schemas: { TaskRecord: RECORD },
  routes,
};
