/** execd's process routes (execdCommandRoutes.ts, execdCodeRoutes.ts: OpenSandbox's execd API) for /openapi.json. */
import { arrayOf, BOOLEAN, INTEGER, nullable, object, ref, STRING, type ApiDoc, type ReplyDoc } from '../../http/openApiTypes';
import { EXECD_PATH_PARAMS, EXECD_SCHEMAS, SANDBOX_ERRORS } from './execdSchemas';

const P = '/sandboxes/:sandboxId/execd';
const STREAM: Record<string, ReplyDoc> = {
  200: {
    description: 'server-sent events, one ExecdEvent each: init, then stdout/stderr lines, then execution_complete or error (a ping after 3 s of silence)',
    contentType: 'text/event-stream',
    schema: { type: 'string', description: 'data: <ExecdEvent JSON> frames' },
    example: 'data: {"type":"init","text":"7a51","timestamp":1795623330962}\n\ndata: {"type":"stdout","text":"hi","timestamp":1795623330976}\n\n',
  },
};
const DONE: Record<string, ReplyDoc> = { 200: { description: 'done: the JSON null', schema: { type: 'null' } } };
const LANGUAGE = { name: 'language', in: 'query' as const, description: 'bash or python', schema: { enum: ['bash', 'python'] } };
const ID_QUERY = { name: 'id', in: 'query' as const, required: true, description: 'the command, session or context id', schema: STRING };
const BUSY = { 409: 'another run is under way, or the sandbox has 16 execd shells already' };

export const EXECD_PROCESS_API_DOC: ApiDoc = {
  tag: 'execd',
  description: "OpenSandbox's execd API on every pool session (and lifecycle sandbox): commands, bash sessions, code contexts, files and metrics.",
  errors: 'opensandbox',
  pathParams: { ...EXECD_PATH_PARAMS, commandId: { description: 'a command id (its init event)', example: '7a51c0de' }, sessionId: { description: 'a bash session id', example: 'b1e55ed0' }, contextId: { description: 'a code context id', example: 'c0de0c0d' } },
  schemas: EXECD_SCHEMAS,
  operations: {
    [`GET ${P}/ping`]: { summary: 'Ready (and warms a command runner)', responses: DONE, errors: SANDBOX_ERRORS },
    [`POST ${P}/command`]: {
      summary: 'Run a command in a fresh subshell (SSE)',
      body: {
        schema: {
          type: 'object',
          properties: { command: STRING, cwd: STRING, envs: { type: 'object', additionalProperties: STRING }, timeout: { type: 'integer', minimum: 0, description: 'ms; 0 or absent: none' }, background: BOOLEAN },
          required: ['command'],
        },
        example: { command: 'echo hi; exit 3', envs: { A: '1' } },
      },
      responses: STREAM,
      errors: { ...SANDBOX_ERRORS, ...BUSY },
    },
    [`DELETE ${P}/command`]: { summary: 'Interrupt a command (or a session run or code run) by id', params: [ID_QUERY], responses: DONE, errors: SANDBOX_ERRORS },
    [`GET ${P}/command/status/:commandId`]: {
      summary: "A command's status",
      responses: {
        200: {
          description: 'its status (RFC 3339 times; exit_code and finished_at null while it runs)',
          schema: object({ id: STRING, content: STRING, running: BOOLEAN, exit_code: nullable(INTEGER), error: STRING, started_at: { type: 'string', format: 'date-time' }, finished_at: nullable({ type: 'string', format: 'date-time' }) }, ['id', 'content', 'running', 'exit_code', 'started_at', 'finished_at']),
        },
      },
      errors: SANDBOX_ERRORS,
    },
    [`GET ${P}/command/:commandId/logs`]: {
      summary: "A background command's output from a cursor",
      params: [{ name: 'cursor', in: 'query', description: 'lines already read', schema: { type: 'integer', minimum: 0 } }],
      responses: {
        200: {
          description: 'stdout and stderr merged, as text',
          contentType: 'text/plain',
          schema: STRING,
          headers: { 'EXECD-COMMANDS-TAIL-CURSOR': { description: 'the cursor for the next read', schema: INTEGER } },
        },
      },
      errors: SANDBOX_ERRORS,
    },
    [`POST ${P}/session`]: {
      summary: 'Open a bash session (state kept across runs)',
      body: { schema: { type: 'object', properties: { cwd: STRING } }, required: false, example: {} },
      responses: { 200: { description: 'its id', schema: object({ session_id: STRING }) } },
      errors: { ...SANDBOX_ERRORS, ...BUSY },
    },
    [`POST ${P}/session/:sessionId/run`]: {
      summary: 'Run a command in a bash session (SSE)',
      body: { schema: { type: 'object', properties: { command: STRING, cwd: STRING, timeout: INTEGER }, required: ['command'] }, example: { command: 'cd /tmp; pwd' } },
      responses: STREAM,
      errors: { ...SANDBOX_ERRORS, ...BUSY },
    },
    [`DELETE ${P}/session/:sessionId`]: { summary: 'End a bash session', responses: DONE, errors: SANDBOX_ERRORS },
    [`POST ${P}/code/context`]: {
      summary: 'Create a code context',
      body: { schema: object({ language: { enum: ['bash', 'python'] } }), example: { language: 'python' } },
      responses: { 200: { description: 'the context', schema: ref('CodeContext') } },
      errors: { ...SANDBOX_ERRORS, 400: 'an unknown language, or python without python3 in the sandbox (`NOT_SUPPORTED`)', ...BUSY },
    },
    [`GET ${P}/code/contexts`]: { summary: 'List code contexts', params: [LANGUAGE], responses: { 200: { description: 'the contexts', schema: arrayOf(ref('CodeContext')) } }, errors: SANDBOX_ERRORS },
    [`DELETE ${P}/code/contexts`]: { summary: "Delete a language's contexts", params: [{ ...LANGUAGE, required: true }], responses: DONE, errors: SANDBOX_ERRORS },
    [`GET ${P}/code/contexts/:contextId`]: { summary: 'One code context', responses: { 200: { description: 'the context', schema: ref('CodeContext') } }, errors: SANDBOX_ERRORS },
    [`DELETE ${P}/code/contexts/:contextId`]: { summary: 'End a code context', responses: DONE, errors: SANDBOX_ERRORS },
    [`POST ${P}/code`]: {
      summary: 'Run code in a context (SSE)',
      body: { schema: { type: 'object', properties: { code: STRING, context: { type: 'object', properties: { id: STRING, language: STRING } } }, required: ['code'] }, example: { code: 'x = 6\nx * 7', context: { language: 'python' } } },
      responses: STREAM,
      errors: { ...SANDBOX_ERRORS, ...BUSY },
    },
    [`DELETE ${P}/code`]: { summary: "Interrupt a context's running code", params: [ID_QUERY], responses: DONE, errors: SANDBOX_ERRORS },
  },
};
