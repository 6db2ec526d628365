/**
 * The sandbox groups' routes on the broker's port (groupRoutes.ts) for /openapi.json.
 * Each sandbox's own Sandbox API listens on a port of its own (its sandbox_url), and again on this
 * server under /groups/{group id}/sandboxes/{id} (a node's sandbox_url: gateways route it by the group id).
 */
import { arrayOf, NUMBER, object, STRING, type ApiDoc, type Schema } from '../../http/openApiTypes';

const DATABASE_ACCESS: Schema = {
  type: 'object',
  properties: { database_type: { const: 'vector' }, access_type: { enum: ['read', 'read_write'] }, namespaces: arrayOf({ type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' }) },
  required: ['database_type'],
  additionalProperties: false,
};
const ID: Schema = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$' };
const STATUS = (status: string): Schema => object({ status: { const: status } });
const LOCAL = 'the local backend: groups need docker (`needs_docker`)';
const SANDBOX = '/groups/:groupId/sandboxes/:sandboxId';
const NOT_RUNNING = { 404: 'no such sandbox in the running group (`sandbox_not_found`)' };
const OBSERVATION = object({ stdout: STRING, stderr: STRING, terminal_still_running: { type: 'boolean' } }, ['stdout', 'stderr', 'terminal_still_running']);

export const GROUP_API_DOC: ApiDoc = {
  tag: 'sandbox groups',
  description: 'Sandbox groups: one group of agent sandboxes (docker only) sharing vector databases; each sandbox serves its Sandbox API on its own sandbox_url.',
  errors: 'pool',
  schemas: { DatabaseAccess: DATABASE_ACCESS },
  operations: {
    'POST /group/start': {
      summary: 'Start the group (and its database)',
      body: {
        required: false,
        schema: { type: 'object', properties: { database_access: { $ref: '#/components/schemas/DatabaseAccess' }, initial_database_population_config: { type: 'string', description: "a YAML file's path on the broker's host" } }, additionalProperties: false },
        example: { database_access: { database_type: 'vector', access_type: 'read_write', namespaces: ['default'] } },
      },
      responses: { 200: { description: 'started', schema: STATUS('started'), example: { status: 'started' } } },
      errors: { 400: 'a bad field or population file (`bad_request`)', 409: 'a group runs already (`group_running`)', 501: LOCAL },
    },
    'POST /group/stop': {
      summary: 'Stop the group: every sandbox, the database, its files',
      body: { schema: {}, required: false, description: 'any JSON, ignored' },
      responses: { 200: { description: 'stopped (also when none ran)', schema: STATUS('stopped'), example: { status: 'stopped' } } },
      errors: { 501: LOCAL },
    },
    'POST /sandbox/start': {
      summary: 'Start a sandbox of the group; answers once its terminal shows a prompt',
      body: {
        schema: {
          type: 'object',
          properties: {
            id: ID,
            tools: arrayOf(STRING),
            compute_resources: object({ cpu_cores: NUMBER, ram_gb: NUMBER, disk_gb: NUMBER, memory_bandwidth_gbps: NUMBER, unit: { enum: ['absolute', 'relative'] } }, []),
            attached_databases: { type: 'object', additionalProperties: { $ref: '#/components/schemas/DatabaseAccess' } },
          },
          required: ['id'],
          additionalProperties: false,
        },
        example: { id: 'sandbox1', compute_resources: { cpu_cores: 1, ram_gb: 1 } },
      },
      responses: {
        200: {
          description: 'its URL, the limits enforced, and what is not',
          schema: object({ sandbox_url: STRING, limits: object({ cpu_cores: NUMBER, memory_bytes: NUMBER, disk_bytes: NUMBER, disk_enforcement: STRING }), warnings: arrayOf(STRING) }),
          example: { sandbox_url: 'http://127.0.0.1:8001', limits: { cpu_cores: 1, memory_bytes: 1073741824, disk_bytes: 10737418240, disk_enforcement: 'an ext4 filesystem on a loop device' }, warnings: [] },
        },
      },
      errors: { 400: 'a bad id, tool, figure or attachment (`bad_request`)', 409: 'no group, or the id is in use (`sandbox_exists`)', 501: LOCAL, 503: 'every sandbox port is taken (`no_sandbox_port`)' },
    },
    'POST /sandbox/stop': {
      summary: 'Stop and remove a sandbox',
      body: { schema: object({ id: ID }), example: { id: 'sandbox1' } },
      responses: { 200: { description: 'stopped', schema: STATUS('stopped'), example: { status: 'stopped' } } },
      errors: { 400: 'a bad id (`bad_request`)', 404: 'no such sandbox running (`sandbox_not_found`)', 501: LOCAL },
    },
    [`POST ${SANDBOX}/execute`]: {
      summary: "A sandbox's actions, in order (its Sandbox API on the broker's port)",
      body: { schema: object({ actions: {} }), example: { actions: { bash: { description: 'a command', args: { command: 'ls' } } } } },
      responses: { 200: { description: 'an observation per action', schema: object({ observations: arrayOf(OBSERVATION) }) } },
      errors: { 400: 'bad actions (`bad_request`)', ...NOT_RUNNING },
    },
    [`POST ${SANDBOX}/input`]: {
      summary: "Text to the sandbox's terminal",
      body: { schema: object({ text: STRING }), example: { text: 'y\n' } },
      responses: { 200: { description: 'sent', schema: STATUS('success'), example: { status: 'success' } } },
      errors: { 400: 'no text (`bad_request`)', ...NOT_RUNNING },
    },
    [`GET ${SANDBOX}/output`]: { summary: "The terminal's output since the last read", responses: { 200: { description: 'what is new', schema: OBSERVATION } }, errors: NOT_RUNNING },
    [`GET ${SANDBOX}/health`]: { summary: "The sandbox's health", responses: { 200: { description: 'healthy', schema: STATUS('healthy') } }, errors: { ...NOT_RUNNING, 503: 'unhealthy, with a reason' } },
  },
};
