/**
 * Sandbox groups' routes on the broker's port, each route's contract written once: inputs, answers
 * and the errors they answer in the pool's `{detail, code}` format. groupRoutes.ts serves these, the
 * bodies are checked against them (groupInput.ts), and /openapi.json shows them. Each sandbox's own
 * Sandbox API listens on a port of its own (its sandbox_url), and again on this server under
 * /groups/{group id}/sandboxes/{id}.
 *
 * A database access is the core's to check (core/groups/groupDatabase.ts), so where one is given the
 * body's domain check runs it in its place and the document shows the DatabaseAccess schema there.
 */
import { Type } from '@sinclair/typebox';
import { arrayOf, NUMBER, object, ref, STRING, type Schema } from '../../http/openApiTypes';
import type { ApiContract, RouteContract } from '../../http/contract';
import { orNull } from '../contractParts';

const DATABASE_ACCESS: Schema = {
  type: 'object',
  properties: { database_type: { const: 'vector' }, access_type: { enum: ['read', 'read_write'] }, namespaces: arrayOf({ type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' }) },
  required: ['database_type'],
  additionalProperties: false,
};
const ID: Schema = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$' };
const STATUS = (status: string): Schema => object({ status: { const: status } });
const LOCAL = 'the local backend: groups need docker (`needs_docker`)';
/** Each sandbox's Sandbox API again on the broker's port (a node's sandbox_url: gateways route it by the group id). */
export const SANDBOX_API_PREFIX = '/groups/:groupId/sandboxes/:sandboxId';
const SANDBOX = SANDBOX_API_PREFIX;
const NOT_RUNNING = { 404: 'no such sandbox in the running group (`sandbox_not_found`)' };
const OBSERVATION = object({ stdout: STRING, stderr: STRING, terminal_still_running: { type: 'boolean' } }, ['stdout', 'stderr', 'terminal_still_running']);

const NOT_AN_OBJECT = 'the request body must be a JSON object';
const ID_REFUSAL = "'id' must be 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit";
const SANDBOX_ID = Type.String({ pattern: ID.pattern as string, 'x-refusal': { '*': ID_REFUSAL } });

/** POST /group/start (an empty body is `{}`): `x-group-start` refuses unknown fields, then checks the database access. */
export const GROUP_START_BODY = Type.Object(
  {
    database_access: Type.Optional(Type.Unsafe<unknown>({ 'x-published': ref('DatabaseAccess') })),
    initial_database_population_config: Type.Optional(
      orNull(Type.String({ description: "a YAML file's path on the broker's host", 'x-path': true, 'x-refusal': { '*': "'initial_database_population_config' must be a path (a string)", 'x-path': "'{field}' {pathFault}" } })),
    ),
  },
  { additionalProperties: false, 'x-group-start': true, 'x-refusal': { type: NOT_AN_OBJECT } },
);

/** POST /sandbox/start: `x-sandbox-start` refuses unknown fields first; each attached database is checked in order by `x-attachments`. */
export const SANDBOX_START_BODY = Type.Object(
  {
    id: SANDBOX_ID,
    tools: Type.Optional(orNull(Type.Array(Type.String({ 'x-path': true, 'x-refusal': { '*': "'tools' must be a list of paths on the broker's host", 'x-path': "'{field}' {pathFault}" } }), { 'x-refusal': { '*': "'tools' must be a list of paths on the broker's host" } }))),
    compute_resources: Type.Optional(Type.Unsafe<unknown>({ 'x-published': object({ cpu_cores: NUMBER, ram_gb: NUMBER, disk_gb: NUMBER, memory_bandwidth_gbps: NUMBER, unit: { enum: ['absolute', 'relative'] } }, []) })),
    attached_databases: Type.Optional(
      Type.Unsafe<Record<string, unknown>>({
        type: 'object',
        'x-attachments': true,
        'x-refusal': { type: "'attached_databases' must be a JSON object" },
        'x-published': { type: 'object', additionalProperties: ref('DatabaseAccess') },
      }),
    ),
  },
  { additionalProperties: false, 'x-sandbox-start': true, 'x-refusal': { type: NOT_AN_OBJECT, required: ID_REFUSAL } },
);

/** POST /sandbox/stop. */
export const SANDBOX_STOP_BODY = Type.Object({ id: SANDBOX_ID }, { 'x-refusal': { type: NOT_AN_OBJECT, required: ID_REFUSAL } });

const routes = {
  startGroup: {
    method: 'POST',
    path: '/group/start',
    summary: 'Start the group (and its database)',
    body: { required: false, schema: GROUP_START_BODY, example: { database_access: { database_type: 'vector', access_type: 'read_write', namespaces: ['default'] } } },
    responses: { 200: { description: 'started', schema: STATUS('started'), example: { status: 'started' } } },
    errors: { 400: 'a bad field or population file (`bad_request`)', 409: 'a group runs already (`group_running`)', 501: LOCAL },
  },
  stopGroup: {
    method: 'POST',
    path: '/group/stop',
    summary: 'Stop the group: every sandbox, the database, its files',
    body: { schema: {}, required: false, description: 'any JSON, ignored' },
    responses: { 200: { description: 'stopped (also when none ran)', schema: STATUS('stopped'), example: { status: 'stopped' } } },
    errors: { 501: LOCAL },
  },
  startSandbox: {
    method: 'POST',
    path: '/sandbox/start',
    summary: 'Start a sandbox of the group; answers once its terminal shows a prompt',
    body: { schema: SANDBOX_START_BODY, example: { id: 'sandbox1', compute_resources: { cpu_cores: 1, ram_gb: 1 } } },
    responses: {
      200: {
        description: 'its URL, the limits enforced, and what is not',
        schema: object({ sandbox_url: STRING, limits: object({ cpu_cores: NUMBER, memory_bytes: NUMBER, disk_bytes: NUMBER, disk_enforcement: STRING }), warnings: arrayOf(STRING) }),
        example: { sandbox_url: 'http://127.0.0.1:8001', limits: { cpu_cores: 1, memory_bytes: 1073741824, disk_bytes: 10737418240, disk_enforcement: 'an ext4 filesystem on a loop device' }, warnings: [] },
      },
    },
    errors: { 400: 'a bad id, tool, figure or attachment (`bad_request`)', 409: 'no group, or the id is in use (`sandbox_exists`)', 501: LOCAL, 503: 'every sandbox port is taken (`no_sandbox_port`)' },
  },
  stopSandbox: {
    method: 'POST',
    path: '/sandbox/stop',
    summary: 'Stop and remove a sandbox',
    body: { schema: SANDBOX_STOP_BODY, example: { id: 'sandbox1' } },
    responses: { 200: { description: 'stopped', schema: STATUS('stopped'), example: { status: 'stopped' } } },
    errors: { 400: 'a bad id (`bad_request`)', 404: 'no such sandbox running (`sandbox_not_found`)', 501: LOCAL },
  },
  sandboxExecute: {
    method: 'POST',
    gateway: 'id',
    path: `${SANDBOX}/execute`,
    summary: "A sandbox's actions, in order (its Sandbox API on the broker's port)",
    body: { schema: object({ actions: {} }), example: { actions: { bash: { description: 'a command', args: { command: 'ls' } } } } },
    responses: { 200: { description: 'an observation per action', schema: object({ observations: arrayOf(OBSERVATION) }) } },
    errors: { 400: 'bad actions (`bad_request`)', ...NOT_RUNNING },
  },
  sandboxInput: {
    method: 'POST',
    gateway: 'id',
    path: `${SANDBOX}/input`,
    summary: "Text to the sandbox's terminal",
    body: { schema: object({ text: STRING }), example: { text: 'y\n' } },
    responses: { 200: { description: 'sent', schema: STATUS('success'), example: { status: 'success' } } },
    errors: { 400: 'no text (`bad_request`)', ...NOT_RUNNING },
  },
  sandboxOutput: {
    method: 'GET',
    gateway: 'id',
    path: `${SANDBOX}/output`,
    summary: "The terminal's output since the last read",
    responses: { 200: { description: 'what is new', schema: OBSERVATION } },
    errors: NOT_RUNNING,
  },
  sandboxHealth: {
    method: 'GET',
    gateway: 'id',
    path: `${SANDBOX}/health`,
    public: true,
    summary: "The sandbox's health",
    responses: { 200: { description: 'healthy', schema: STATUS('healthy') } },
    errors: { ...NOT_RUNNING, 503: 'unhealthy, with a reason' },
  },
} satisfies Record<string, RouteContract>;

export const GROUP_CONTRACT: ApiContract<typeof routes> = {
  tag: 'sandbox groups',
  description: 'Sandbox groups: one group of agent sandboxes (docker only) sharing vector databases; each sandbox serves its Sandbox API on its own sandbox_url.',
  errors: 'pool',
  // The group API names no group (a broker holds one): its routes go to the home node; a sandbox's by its group's id.
  gateway: 'home',
  schemas: { DatabaseAccess: DATABASE_ACCESS },
  routes,
};
