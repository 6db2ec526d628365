/**
 * OpenSandbox's execd API, each route's contract written once: its method and path under
 * `/sandboxes/{id}/execd`, its inputs and answers, the errors it answers in OpenSandbox's
 * `{code, message}` envelope. The routers serve these (execdCommandRoutes.ts, execdCodeRoutes.ts,
 * execdFileRoutes.ts, execdMetricsRoutes.ts), the bodies (execdBodies.ts) are checked against them
 * (execdInput.ts), and /openapi.json shows them under two tags: processes, and files with metrics.
 */
import { arrayOf, BOOLEAN, INTEGER, nullable, NUMBER, object, ref, STRING, type ParamDoc, type PathParamDoc, type ReplyDoc, type Schema } from '../../http/openApiTypes';
import type { ApiContract, RouteContract } from '../../http/contract';
import { PATH_PARAM } from '../contractParts';
import { CREATE_CONTEXT_BODY, CREATE_SESSION_BODY, PERMISSION, PERMISSIONS_BODY, RENAME_BODY, REPLACE_BODY, runCodeBody, runCommandBody, sessionRunBody } from './execdBodies';
import { execdPrefix } from './execdPrefix';

export const SANDBOX_ID = 'f3c1d2e4a5b6978812345678abcdef01';

const SANDBOX: PathParamDoc = { description: 'a pool session_id (or a lifecycle sandbox id)', example: SANDBOX_ID };
const EXECD_PATH_PARAMS: Record<string, PathParamDoc> = { sandboxId: SANDBOX, id: SANDBOX };

/** On every execd route: the sandbox's own answers. */
const SANDBOX_ERRORS: Record<number, string> = {
  400: 'a bad request, or the sandbox ended (released or reclaimed)',
  404: 'no such sandbox, or no such command, session or context',
  410: 'the sandbox broke (its shell or container died)',
};

const EXECD_SCHEMAS: Record<string, Schema> = {
  ExecdEvent: {
    type: 'object',
    description: 'One server-sent event (`data: <json>`) of a command, session run or code run.',
    properties: {
      type: { enum: ['init', 'stdout', 'stderr', 'execution_count', 'result', 'execution_complete', 'error', 'ping'] },
      text: STRING,
      timestamp: INTEGER,
      execution_count: INTEGER,
      execution_time: INTEGER,
      results: { type: 'object', additionalProperties: STRING },
      error: object({ ename: STRING, evalue: STRING, traceback: arrayOf(STRING) }),
    },
    required: ['type', 'timestamp'],
    additionalProperties: false,
  },
  FileInfo: object({
    path: STRING,
    type: { enum: ['file', 'directory', 'symlink', 'other'] },
    size: INTEGER,
    modified_at: { type: 'string', format: 'date-time' },
    created_at: { type: 'string', format: 'date-time' },
    owner: STRING,
    group: STRING,
    mode: { type: 'integer', description: 'octal digits written as an integer (755)' },
  }),
  CodeContext: object({ id: STRING, language: { enum: ['bash', 'python'] } }),
};

// ---- answers ----

const STREAM: Record<string, ReplyDoc> = {
  200: {
    description: 'server-sent events, one ExecdEvent each: init, then stdout/stderr lines, then execution_complete or error (a ping after 3 s of silence)',
    contentType: 'text/event-stream',
    schema: { type: 'string', description: 'data: <ExecdEvent JSON> frames' },
    example: 'data: {"type":"init","text":"7a51","timestamp":1795623330962}\n\ndata: {"type":"stdout","text":"hi","timestamp":1795623330976}\n\n',
  },
};
const DONE: Record<string, ReplyDoc> = { 200: { description: 'done: the JSON null', schema: { type: 'null' } } };
const EMPTY: Record<string, ReplyDoc> = { 200: { description: 'done (an empty body)' } };
const LANGUAGE: ParamDoc = { name: 'language', in: 'query', description: 'bash or python', schema: { enum: ['bash', 'python'] } };
const ID_QUERY: ParamDoc = { name: 'id', in: 'query', required: true, description: 'the command, session or context id', schema: STRING };
const BUSY = { 409: 'another run is under way, or the sandbox has 16 execd shells already' };

const P = execdPrefix('sandboxId');

const process = {
  ping: { method: 'GET', path: `${P}/ping`, summary: 'Ready (and warms a command runner)', responses: DONE, errors: SANDBOX_ERRORS },
  runCommand: {
    method: 'POST',
    path: `${P}/command`,
    summary: 'Run a command in a fresh subshell (SSE)',
    body: { schema: runCommandBody(), example: { command: 'echo hi; exit 3', envs: { A: '1' } } },
    responses: STREAM,
    errors: { ...SANDBOX_ERRORS, ...BUSY },
  },
  interruptCommand: { method: 'DELETE', path: `${P}/command`, summary: 'Interrupt a command (or a session run or code run) by id', params: [ID_QUERY], responses: DONE, errors: SANDBOX_ERRORS },
  commandStatus: {
    method: 'GET',
    path: `${P}/command/status/:commandId`,
    summary: "A command's status",
    responses: {
      200: {
        description: 'its status (RFC 3339 times; exit_code and finished_at null while it runs)',
        schema: object({ id: STRING, content: STRING, running: BOOLEAN, exit_code: nullable(INTEGER), error: STRING, started_at: { type: 'string', format: 'date-time' }, finished_at: nullable({ type: 'string', format: 'date-time' }) }, ['id', 'content', 'running', 'exit_code', 'started_at', 'finished_at']),
      },
    },
    errors: SANDBOX_ERRORS,
  },
  commandLogs: {
    method: 'GET',
    path: `${P}/command/:commandId/logs`,
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
  createSession: {
    method: 'POST',
    path: `${P}/session`,
    summary: 'Open a bash session (state kept across runs)',
    body: { schema: CREATE_SESSION_BODY, required: false, example: {} },
    responses: { 200: { description: 'its id', schema: object({ session_id: STRING }) } },
    errors: { ...SANDBOX_ERRORS, ...BUSY },
  },
  sessionRun: {
    method: 'POST',
    path: `${P}/session/:sessionId/run`,
    summary: 'Run a command in a bash session (SSE)',
    body: { schema: sessionRunBody(), example: { command: 'cd /tmp; pwd' } },
    responses: STREAM,
    errors: { ...SANDBOX_ERRORS, ...BUSY },
  },
  deleteSession: { method: 'DELETE', path: `${P}/session/:sessionId`, summary: 'End a bash session', responses: DONE, errors: SANDBOX_ERRORS },
  createContext: {
    method: 'POST',
    path: `${P}/code/context`,
    summary: 'Create a code context',
    body: { schema: CREATE_CONTEXT_BODY, example: { language: 'python' } },
    responses: { 200: { description: 'the context', schema: ref('CodeContext') } },
    errors: { ...SANDBOX_ERRORS, 400: 'an unknown language, or python without python3 in the sandbox (`NOT_SUPPORTED`)', ...BUSY },
  },
  listContexts: { method: 'GET', path: `${P}/code/contexts`, summary: 'List code contexts', params: [LANGUAGE], responses: { 200: { description: 'the contexts', schema: arrayOf(ref('CodeContext')) } }, errors: SANDBOX_ERRORS },
  deleteContexts: { method: 'DELETE', path: `${P}/code/contexts`, summary: "Delete a language's contexts", params: [{ ...LANGUAGE, required: true }], responses: DONE, errors: SANDBOX_ERRORS },
  getContext: { method: 'GET', path: `${P}/code/contexts/:contextId`, summary: 'One code context', responses: { 200: { description: 'the context', schema: ref('CodeContext') } }, errors: SANDBOX_ERRORS },
  deleteContext: { method: 'DELETE', path: `${P}/code/contexts/:contextId`, summary: 'End a code context', responses: DONE, errors: SANDBOX_ERRORS },
  runCode: {
    method: 'POST',
    path: `${P}/code`,
    summary: 'Run code in a context (SSE)',
    body: { schema: runCodeBody(), example: { code: 'x = 6\nx * 7', context: { language: 'python' } } },
    responses: STREAM,
    errors: { ...SANDBOX_ERRORS, ...BUSY },
  },
  interruptCode: { method: 'DELETE', path: `${P}/code`, summary: "Interrupt a context's running code", params: [ID_QUERY], responses: DONE, errors: SANDBOX_ERRORS },
} satisfies Record<string, RouteContract>;

/** Commands, bash sessions and code contexts. */
export const EXECD_PROCESS_CONTRACT: ApiContract<typeof process> = {
  tag: 'execd',
  description: "OpenSandbox's execd API on every pool session (and lifecycle sandbox): commands, bash sessions, code contexts, files and metrics.",
  errors: 'opensandbox',
  pathPrefix: '/sandboxes',
  gateway: 'id',
  pathParams: { ...EXECD_PATH_PARAMS, commandId: { description: 'a command id (its init event)', example: '7a51c0de' }, sessionId: { description: 'a bash session id', example: 'b1e55ed0' }, contextId: { description: 'a code context id', example: 'c0de0c0d' } },
  schemas: { ...EXECD_SCHEMAS, Permission: PERMISSION },
  routes: process,
};

const F = execdPrefix('id');
const PATHS: ParamDoc = { name: 'path', in: 'query', required: true, description: 'a path (repeat for several); absolute, or relative to the working directory', schema: PATH_PARAM, example: 'notes.txt' };
const FILE_ERRORS: Record<number, string> = {
  ...SANDBOX_ERRORS,
  403: 'the path leaves the working directory (`FORBIDDEN`)',
  404: 'no such sandbox, or no such file (`FILE_NOT_FOUND`)',
  413: 'over a limit (`INVALID_REQUEST_BODY`)',
};
const METRICS = object({ cpu_count: NUMBER, cpu_used_pct: NUMBER, mem_total_mib: NUMBER, mem_used_mib: NUMBER, timestamp: { type: 'integer' }, scope: STRING });

const files = {
  info: {
    method: 'GET',
    path: `${F}/files/info`,
    summary: 'FileInfo of each path (symlinks followed)',
    params: [PATHS],
    responses: {
      200: {
        description: 'path -> FileInfo',
        schema: { type: 'object', additionalProperties: ref('FileInfo') },
        example: { 'notes.txt': { path: `/tmp/s/${SANDBOX_ID}/notes.txt`, type: 'file', size: 6, modified_at: '2026-01-01T00:00:00.000Z', created_at: '2026-01-01T00:00:00.000Z', owner: 'root', group: 'root', mode: 644 } },
      },
    },
    errors: FILE_ERRORS,
  },
  removeFiles: { method: 'DELETE', path: `${F}/files`, summary: 'Delete files', params: [PATHS], responses: EMPTY, errors: FILE_ERRORS },
  permissions: { method: 'POST', path: `${F}/files/permissions`, summary: 'chmod and chown', body: { schema: PERMISSIONS_BODY, example: { 'run.sh': { mode: 755 } } }, responses: EMPTY, errors: FILE_ERRORS },
  move: { method: 'POST', path: `${F}/files/mv`, summary: 'Rename files', body: { schema: RENAME_BODY, example: [{ src: 'a.txt', dest: 'b.txt' }] }, responses: EMPTY, errors: FILE_ERRORS },
  search: {
    method: 'GET',
    path: `${F}/files/search`,
    summary: 'Files below a directory matching a glob',
    params: [{ ...PATHS, description: 'the directory' }, { name: 'pattern', in: 'query', description: 'a glob, default **', schema: STRING, example: '*.txt' }],
    responses: { 200: { description: 'FileInfo list, in path order', schema: arrayOf(ref('FileInfo')) } },
    errors: FILE_ERRORS,
  },
  replace: {
    method: 'POST',
    path: `${F}/files/replace`,
    summary: 'Replace text in files, byte for byte',
    params: [{ name: 'verbose', in: 'query', description: 'true: answer the counts', schema: { enum: ['true', 'false'] } }],
    body: { schema: REPLACE_BODY, example: { 'notes.txt': { old: 'hello', new: 'bye' } } },
    responses: { 200: { description: 'empty; with verbose=true, path -> {replacedCount}', schema: { type: 'object', additionalProperties: object({ replacedCount: { type: 'integer' } }) } } },
    errors: FILE_ERRORS,
  },
  upload: {
    method: 'POST',
    path: `${F}/files/upload`,
    summary: 'Upload files (multipart: a metadata part, then a file part, repeated)',
    body: {
      contentType: 'multipart/form-data',
      schema: {
        type: 'object',
        properties: {
          metadata: { type: 'string', description: 'JSON {path, mode?, owner?, group?}', contentMediaType: 'application/json', contentSchema: object({ path: PATH_PARAM, mode: { type: ['integer', 'string'] }, owner: STRING, group: STRING }, ['path'], true) },
          file: { type: 'string', contentMediaType: 'application/octet-stream' },
        },
      },
    },
    responses: EMPTY,
    errors: FILE_ERRORS,
  },
  download: {
    method: 'GET',
    path: `${F}/files/download`,
    summary: "A file's bytes (Range, or offset and limit, for a part)",
    params: [
      PATHS,
      { name: 'offset', in: 'query', description: 'first byte (instead of Range)', schema: { type: 'integer', minimum: 0 } },
      { name: 'limit', in: 'query', description: 'bytes (instead of Range)', schema: { type: 'integer', minimum: 0 } },
      { name: 'Range', in: 'header', description: 'bytes=a-b, a- or -n', schema: STRING },
    ],
    responses: {
      200: { description: 'the bytes', contentType: 'application/octet-stream', schema: STRING },
      206: { description: 'the range asked for, with Content-Range', contentType: 'application/octet-stream', schema: STRING },
    },
    errors: { ...FILE_ERRORS, 416: 'the range starts past the end, or is malformed (`RANGE_NOT_SATISFIABLE`)' },
  },
  list: {
    method: 'GET',
    path: `${F}/directories/list`,
    summary: 'Entries below a directory, depth levels down',
    params: [{ ...PATHS, description: 'the directory' }, { name: 'depth', in: 'query', description: 'default 1; 0 means 1', schema: { type: 'integer', minimum: 0, default: 1 } }],
    responses: { 200: { description: 'FileInfo list', schema: arrayOf(ref('FileInfo')) } },
    errors: FILE_ERRORS,
  },
  makeDirectories: { method: 'POST', path: `${F}/directories`, summary: 'mkdir -p, then mode and owner', body: { schema: PERMISSIONS_BODY, example: { 'out/logs': { mode: 755 } } }, responses: EMPTY, errors: FILE_ERRORS },
  removeDirectories: { method: 'DELETE', path: `${F}/directories`, summary: 'rm -rf directories', params: [PATHS], responses: EMPTY, errors: FILE_ERRORS },
  metrics: {
    method: 'GET',
    path: `${F}/metrics`,
    summary: "The sandbox's CPU and memory",
    responses: { 200: { description: 'one report; scope says what was measured', schema: METRICS, example: { cpu_count: 1, cpu_used_pct: 3.5, mem_total_mib: 768, mem_used_mib: 12.4, timestamp: 1795623330962, scope: 'container cgroup' } } },
    errors: SANDBOX_ERRORS,
  },
  watchMetrics: {
    method: 'GET',
    path: `${F}/metrics/watch`,
    summary: 'The same report once a second (SSE) until the client leaves',
    responses: { 200: { description: 'server-sent events, `data: <metrics JSON>`; an `error` event when the sandbox ends', contentType: 'text/event-stream', schema: STRING } },
    errors: SANDBOX_ERRORS,
  },
} satisfies Record<string, RouteContract>;

/** Files, directories and metrics. */
export const EXECD_FILES_CONTRACT: ApiContract<typeof files> = {
  tag: 'execd files',
  description: "execd's files, directories and metrics, inside the sandbox's working directory.",
  errors: 'opensandbox',
  pathPrefix: '/sandboxes',
  gateway: 'id',
  pathParams: EXECD_PATH_PARAMS,
  routes: files,
};
