/**
 * The workspace API (shared PTY workspaces) and its terminal page, each route's contract written
 * once: its method and path, inputs, answers and the errors it answers in the pool's
 * `{detail, code}` format. Every workspace route exists twice, on the root paths (the default
 * workspace) and under /workspaces/{workspaceId}. The routers serve these (workspaceRoutes.ts,
 * workspacePage.ts), the bodies are checked against them (workspaceInput.ts), and /openapi.json
 * shows them.
 *
 * BROKER_MAX_COMMAND_BYTES joins the execute schema the route checks with; the document shows it without.
 */
import { Type } from '@sinclair/typebox';
import { arrayOf, BOOLEAN, INTEGER, nullable, object, ref, STRING, type Schema } from '../../http/openApiTypes';
import type { ApiContract, Destination, RouteContract } from '../../http/contract';
import type { CommandLimits } from '../../core/session/sessionInput';
import { commandSchema, orNull, PATH_PARAM } from '../contractParts';

export const MAX_WAIT_SECONDS = 30;
const NOT_AN_OBJECT = 'Request body must be a JSON object';

const ID = '0b22c3d4e5f60718293a4b5c6d7e8f90';
const JOB = '9c3d2e1f00aa44bb';
const CONTENT: Schema = { type: 'string', description: 'the bytes as UTF-8 text, or base64 (`encoding`)' };
const ENCODING: Schema = { enum: ['utf-8', 'base64'] };
const FILENAME = { name: 'filename', in: 'query' as const, required: true, description: 'a path in the workspace directory (relative, or absolute inside it)', schema: PATH_PARAM, example: 'notes.txt' };
const UNKNOWN = 'no such workspace (`workspace_not_found`)';
const FILE_ERRORS = { 400: 'a bad parameter, or a directory (`not_a_file`)', 403: 'the path leaves the workspace directory (`forbidden`)', 404: 'no such file, or workspace (`file_not_found`)' };

const EVENT: Schema = {
  type: 'object',
  description:
    'One workspace event: command, output, exit; shell_restarted and shell_restart_failed (its shell ended), workspace_moved and workspace_move_failed (its slot was lost), interrupt_escalated (an interrupt replaces the shell of a job that outlived ^C and kills); or a first `dropped` when asked for events the ring no longer holds.',
  properties: {
    seq_id: INTEGER,
    type: { enum: ['command', 'output', 'exit', 'shell_restarted', 'shell_restart_failed', 'workspace_moved', 'workspace_move_failed', 'interrupt_escalated', 'dropped'] },
    job_id: STRING,
    command: STRING,
    source: { enum: ['api', 'terminal'] },
    stream: STRING,
    line: STRING,
    returncode: nullable(INTEGER),
    duration_ms: INTEGER,
    reason: STRING,
    exit_code: nullable(INTEGER),
    restart_delay_ms: INTEGER,
    from_seq: INTEGER,
    to_seq: INTEGER,
    ring_start: INTEGER,
  },
  required: ['type'],
};

/** POST .../api/execute. */
export function executeBody(limits?: Pick<CommandLimits, 'maxCommandBytes'>) {
  return Type.Object(
    {
      command: commandSchema(limits),
      wait: Type.Optional(
        orNull(Type.Number({ minimum: 0, maximum: MAX_WAIT_SECONDS, description: 'seconds, default 5', 'x-refusal': { '*': `'wait' must be a number of seconds from 0 to ${MAX_WAIT_SECONDS}, got {json}` } })),
      ),
    },
    { 'x-refusal': { type: NOT_AN_OBJECT, required: "'{missing}' is required" } },
  );
}

/** POST .../api/input. */
export const INPUT_BODY = Type.Object({ text: Type.String({ 'x-refusal': { '*': "'text' must be a string" } }) }, { 'x-refusal': { type: NOT_AN_OBJECT, required: "'text' must be a string" } });

const TEXT_FIELD = { '*': "'{field}' must be a string" };

/**
 * POST .../api/write: `x-workspace-write` refuses a missing filename or content in that order, as
 * their types are; a base64 content is decoded once the schema passed (workspaceInput.ts).
 */
export const WRITE_BODY = Type.Object(
  {
    filename: Type.String({ 'x-path': true, 'x-refusal': { ...TEXT_FIELD, 'x-path': "'{field}' {pathFault}" } }),
    content: Type.String({ description: 'the bytes as UTF-8 text, or base64 (`encoding`)', 'x-refusal': TEXT_FIELD }),
    encoding: Type.Optional(
      Type.Unsafe<'utf-8' | 'utf8' | 'base64' | null>({ type: ['string', 'null'], enum: ['utf-8', 'utf8', 'base64', null], description: 'default utf-8', 'x-refusal': { '*': "'encoding' must be 'utf-8' or 'base64', got {json}" } }),
    ),
  },
  { 'x-workspace-write': true, 'x-refusal': { type: NOT_AN_OBJECT } },
);

const PAGE = { 200: { description: 'the page (public: it holds no data)', contentType: 'text/html', schema: STRING } };

/** The routes of one workspace, under `prefix` ('' for the default workspace). */
function workspaceRoutes(prefix: string, which: string) {
  const errors = prefix ? { 404: UNKNOWN } : { 404: `${UNKNOWN}: the default workspace is off (BROKER_DEFAULT_WORKSPACE=0)` };
  // A named workspace's calls go to the node its id names; the default one lives on the home node.
  const gateway: Destination = prefix ? 'id' : 'home';
  const routes = {
    execute: {
      method: 'POST',
      path: `${prefix}/api/execute`,
      gateway,
      summary: `Type a command into ${which}'s terminal`,
      description: 'Answers when the job ends, or after `wait` seconds with `returncode` null and the output so far (the rest streams over /ws/workspace).',
      body: { schema: executeBody(), example: { command: 'cd /tmp && echo hi', wait: 5 } },
      responses: { 200: { description: 'the job', schema: ref('WorkspaceJob'), example: { job_id: JOB, command: 'cd /tmp && echo hi', returncode: 0, stdout: 'hi' } } },
      errors: { ...errors, 400: 'a bad command or wait (`bad_request`)', 409: 'a job runs (`workspace_busy`, with its job_id)', 413: 'the command is too large (`payload_too_large`)' },
    },
    interrupt: {
      method: 'POST',
      path: `${prefix}/api/interrupt`,
      gateway,
      summary: `^C to ${which}'s terminal`,
      body: { schema: {}, required: false, description: 'any JSON, ignored' },
      responses: { 200: { description: 'the job it interrupted, or null', schema: object({ job_id: nullable(STRING) }), example: { job_id: JOB } } },
      errors,
    },
    input: {
      method: 'POST',
      path: `${prefix}/api/input`,
      gateway,
      summary: `Keys to ${which}'s terminal, as they are`,
      body: { schema: INPUT_BODY, example: { text: 'sesame\r' } },
      responses: { 200: { description: 'sent', schema: object({ status: { const: 'sent' } }), example: { status: 'sent' } } },
      errors: { ...errors, 400: "'text' must be a string (`bad_request`)" },
    },
    logs: {
      method: 'GET',
      path: `${prefix}/api/workspace/logs`,
      gateway,
      summary: `${which}'s events`,
      params: [
        { name: 'offset', in: 'query', description: 'absolute seq to start at; negative counts from the tail', schema: INTEGER, example: -20 },
        { name: 'limit', in: 'query', description: '1 to 1000, default 100', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
      ],
      responses: {
        200: {
          description: 'the events in seq order',
          schema: arrayOf(ref('WorkspaceEvent')),
          example: [{ seq_id: 4, type: 'command', job_id: JOB, command: 'echo hi', source: 'api' }],
          headers: {
            'X-Workspace-Log-Start': { description: "the ring's first seq", schema: INTEGER },
            'X-Workspace-Log-Next': { description: 'the next seq', schema: INTEGER },
          },
        },
      },
      errors: { ...errors, 400: 'a bad offset or limit (`bad_request`)' },
    },
    write: {
      method: 'POST',
      path: `${prefix}/api/write`,
      gateway,
      summary: `Create or overwrite a file in ${which}`,
      body: { schema: WRITE_BODY, example: { filename: 'notes.txt', content: 'hello\n' } },
      responses: { 200: { description: 'written', schema: object({ filename: STRING, path: STRING, bytes_written: INTEGER }), example: { filename: 'notes.txt', path: `/tmp/s/${ID}/notes.txt`, bytes_written: 6 } } },
      errors: { ...errors, ...FILE_ERRORS, 400: 'a bad field (`bad_request`)' },
    },
    read: {
      method: 'GET',
      path: `${prefix}/api/read`,
      gateway,
      summary: `Read a file of ${which}`,
      params: [FILENAME],
      responses: {
        200: {
          description: 'its content',
          schema: object({ filename: STRING, path: STRING, size: INTEGER, content: CONTENT, encoding: ENCODING }),
          example: { filename: 'notes.txt', path: `/tmp/s/${ID}/notes.txt`, size: 6, content: 'hello\n', encoding: 'utf-8' },
        },
      },
      errors: { ...errors, ...FILE_ERRORS, 413: 'larger than BROKER_WORKSPACE_MAX_READ_BYTES (`payload_too_large`)' },
    },
    readPartial: {
      method: 'GET',
      path: `${prefix}/api/read-partial`,
      gateway,
      summary: `Read part of a file of ${which}`,
      params: [
        FILENAME,
        { name: 'offset', in: 'query', description: 'first byte, default 0', schema: { type: 'integer', minimum: 0 } },
        { name: 'limit', in: 'query', description: 'bytes, default 65536', schema: { type: 'integer', minimum: 0 } },
      ],
      responses: {
        200: {
          description: 'the bytes asked for',
          schema: object({ filename: STRING, path: STRING, offset: INTEGER, length: INTEGER, total_size: INTEGER, has_more: BOOLEAN, content: CONTENT, encoding: ENCODING }),
        },
      },
      errors: { ...errors, ...FILE_ERRORS },
    },
    events: {
      method: 'WS',
      path: `${prefix}/ws/workspace`,
      gateway,
      summary: `WebSocket: ${which}'s events, live (\`?since=SEQ\` replays first)`,
      params: [{ name: 'since', in: 'query', description: 'replay the ring from this seq first', schema: { type: 'integer', minimum: 0 } }],
      responses: { 101: { description: 'Switching Protocols: JSON text messages, one WorkspaceEvent each' } },
      errors,
    },
    terminal: {
      method: 'WS',
      path: `${prefix}/ws/workspace/terminal`,
      gateway,
      summary: `WebSocket: ${which}'s terminal (raw bytes out; keys, input and resize messages in)`,
      responses: { 101: { description: 'Switching Protocols' } },
      errors,
    },
  } satisfies Record<string, RouteContract>;
  /** The paths an earlier workspace API had: 410 with where to go instead. */
  const deprecated = ['/execute-async', '/execute-async/status', '/execute/worker'].flatMap((path) =>
    (['GET', 'POST'] as const).map((method): RouteContract => ({
      method,
      path: prefix + path,
      gateway,
      summary: 'Deprecated by the workspace API: not served',
      responses: {},
      errors: { 410: 'use POST /api/execute (`deprecated_endpoint`)' },
    })),
  );
  return { ...routes, deprecated };
}

/** Each workspace's routes: the default workspace's (root paths) and a named one's. */
export const WORKSPACE_ROUTES = {
  default: workspaceRoutes('', 'the default workspace'),
  named: workspaceRoutes('/workspaces/:workspaceId', 'the workspace'),
};

const routes = {
  create: {
    method: 'POST',
    path: '/workspaces',
    gateway: 'create',
    summary: 'Create a named workspace',
    body: { schema: {}, required: false, description: 'any JSON, ignored' },
    responses: { 201: { description: 'created', schema: object({ workspace_id: STRING, workdir: STRING }), example: { workspace_id: ID, workdir: `/tmp/s/${ID}/` } } },
    errors: { 503: 'no slot became free in time (`pool_exhausted`)' },
  },
  list: {
    method: 'GET',
    path: '/workspaces',
    gateway: 'list-workspaces',
    summary: 'List the workspaces',
    responses: { 200: { description: 'the workspaces', schema: arrayOf(object({ workspace_id: STRING, workdir: STRING, running_job_id: nullable(STRING) })) } },
  },
  end: {
    method: 'DELETE',
    path: '/workspaces/:workspaceId',
    gateway: 'id',
    summary: 'End a workspace (its slot goes back to the pool)',
    responses: { 200: { description: 'ended', schema: object({ workspace_id: STRING, status: { const: 'ended' } }) } },
    errors: { 404: UNKNOWN },
  },
} satisfies Record<string, RouteContract>;

// The pages are the same on every node (their script calls the routes above).
const page = {
  defaultPage: { method: 'GET', path: '/ui/workspace', public: true, gateway: 'any', summary: "The default workspace's terminal page", responses: PAGE },
  namedPage: { method: 'GET', path: '/ui/workspaces/:workspaceId', public: true, gateway: 'any', summary: "A workspace's terminal page", responses: PAGE },
  assets: {
    method: 'GET',
    path: '/ui/assets/:name',
    public: true,
    gateway: 'any',
    summary: "The terminal page's scripts and styles (xterm.js from node_modules)",
    responses: { 200: { description: 'the file', contentType: 'text/javascript', schema: STRING }, 404: { description: 'no such asset', contentType: 'text/plain', schema: STRING } },
  },
} satisfies Record<string, RouteContract>;

/** The page's routes (workspacePage.ts). */
export const WORKSPACE_PAGE_ROUTES = page;

function flat(each: ReturnType<typeof workspaceRoutes>): RouteContract[] {
  const { deprecated, ...rest } = each;
  return [...Object.values(rest), ...deprecated];
}

export const WORKSPACE_CONTRACT: ApiContract<typeof routes & typeof page & Record<string, RouteContract>> = {
  tag: 'workspace',
  description: 'Shared PTY workspaces: one long-lived bash in a real terminal, shared by an agent over HTTP and people over WebSockets.',
  errors: 'pool',
  pathParams: {
    workspaceId: { description: 'a workspace_id from POST /workspaces', example: ID },
    name: { description: 'an asset file name', example: 'xterm.js' },
  },
  schemas: { WorkspaceJob: object({ job_id: STRING, command: STRING, returncode: nullable(INTEGER), stdout: STRING }), WorkspaceEvent: EVENT },
  routes: {
    ...routes,
    ...Object.fromEntries([...flat(WORKSPACE_ROUTES.default), ...flat(WORKSPACE_ROUTES.named)].map((r) => [`${r.method} ${r.path}`, r])),
    ...page,
  } as typeof routes & typeof page & Record<string, RouteContract>,
};
