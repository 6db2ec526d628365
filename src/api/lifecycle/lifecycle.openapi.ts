/**
 * OpenSandbox's lifecycle API under /v1 (lifecycleRoutes.ts), its unserved parts (unservedRoutes.ts:
 * 501s), and the proxy to a sandbox's other ports (portProxy.ts) for /openapi.json.
 */
import { arrayOf, BOOLEAN, INTEGER, object, ref, STRING, type ApiDoc, type OperationDoc, type ReplyDoc, type Schema } from '../../http/openApiTypes';

const ID = '5b7c0ffee0c0ffee0c0ffee0c0ffee01';
const AT: Schema = { type: 'string', format: 'date-time' };
const STRINGS: Schema = { type: 'object', additionalProperties: STRING };
const STATE: Schema = { enum: ['Pending', 'Running', 'Pausing', 'Paused', 'Resuming', 'Stopping', 'Terminated', 'Failed'] };
const SANDBOX_ERRORS = { 404: 'no such sandbox (`NOT_FOUND`)' };
const ACCEPTED: Record<string, ReplyDoc> = { 202: { description: 'accepted (no body)' } };
const NOT_SERVED = 'not served by this broker (`NOT_SUPPORTED`)';

const SANDBOX: Schema = {
  type: 'object',
  properties: {
    id: STRING,
    status: { type: 'object', properties: { state: STATE, reason: { type: ['string', 'null'] }, message: { type: ['string', 'null'] }, lastTransitionAt: AT }, required: ['state', 'lastTransitionAt'] },
    metadata: STRINGS,
    entrypoint: arrayOf(STRING),
    createdAt: AT,
    expiresAt: AT,
    image: object({ uri: STRING }),
  },
  required: ['id', 'status', 'metadata', 'entrypoint', 'createdAt'],
  additionalProperties: false,
};

const CREATE: Schema = {
  type: 'object',
  description: 'CreateSandboxRequest. snapshotId, networkPolicy, credentialProxy, volumes, secureAccess: true and image.auth answer 501.',
  properties: {
    image: { type: 'object', properties: { uri: STRING }, required: ['uri'] },
    entrypoint: arrayOf(STRING),
    timeout: { type: ['integer', 'null'], description: 'seconds until it expires; null: none' },
    resourceLimits: { type: 'object', properties: { cpu: STRING, memory: STRING }, additionalProperties: false },
    resourceRequests: STRINGS,
    env: STRINGS,
    metadata: STRINGS,
    platform: object({ os: STRING, arch: STRING }),
    extensions: { type: 'object', properties: { poolRef: { type: 'string', description: 'a named pool of BROKER_POOLS to serve it from' } }, additionalProperties: STRING },
    snapshotId: STRING,
    networkPolicy: { type: 'object' },
    credentialProxy: { type: 'object' },
    secureAccess: BOOLEAN,
    volumes: { type: 'array' },
  },
  additionalProperties: false,
};

function unserved(summary: string): OperationDoc {
  return { summary, responses: {}, errors: { 404: 'no such sandbox (`NOT_FOUND`)', 501: NOT_SERVED } };
}

const EGRESS: Record<string, OperationDoc> = {};
for (const p of ['policy', 'credential-vault', 'credential-vault/credentials', 'credential-vault/credentials/:name', 'credential-vault/bindings', 'credential-vault/bindings/:name']) {
  for (const m of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) EGRESS[`${m} /sandboxes/:id/egress/${p}`] = unserved('The egress sidecar (where the egress endpoint leads): not served');
}

const PROXY: Record<string, OperationDoc> = {};
for (const m of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
  PROXY[`${m} /sandboxes/:id/port/:port/*path`] = {
    summary: "Proxy to a port of the sandbox (its endpoint): the request and answer streamed as they are; the broker's token is not passed on",
    responses: { default: { description: "the service's own answer" } },
    errors: { 400: 'not a port number (`INVALID_REQUEST_BODY`)', 404: 'no such sandbox, or nothing listens on the port (`NOT_FOUND`)', 502: 'the service failed mid-answer (`RUNTIME_ERROR`)' },
  };
}
PROXY['WS /sandboxes/:id/port/:port/*path'] = { summary: "WebSocket to a port of the sandbox, messages relayed both ways", responses: { 101: { description: 'Switching Protocols' } } };

export const LIFECYCLE_API_DOC: ApiDoc = {
  tag: 'lifecycle',
  description: "OpenSandbox's lifecycle API (/v1): sandboxes from a warm pool or a dedicated container, their expiry, pause and resume, and their endpoints. The token may come as OPEN-SANDBOX-API-KEY.",
  errors: 'opensandbox',
  pathParams: {
    id: { description: 'a sandbox id', example: ID },
    port: { description: 'a port of the sandbox', example: '8080', schema: { type: 'string', pattern: '^\\d{1,5}$' } },
    snapshotId: { description: 'a snapshot id', example: 'snap1' },
    name: { description: 'a credential or binding name', example: 'github' },
    path: { description: 'the rest of the path, slashes included (may be empty)', example: 'index.html' },
  },
  schemas: { Sandbox: SANDBOX, CreateSandboxRequest: CREATE },
  operations: {
    'POST /v1/sandboxes': {
      summary: 'Create a sandbox',
      body: { schema: ref('CreateSandboxRequest'), example: { image: { uri: 'bash-broker-sandbox' }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600, resourceLimits: { cpu: '1', memory: '512Mi' } } },
      responses: { 202: { description: 'created (CreateSandboxResponse: the Sandbox without its image), Location: its URL', schema: ref('Sandbox') } },
      errors: { 400: 'a bad field (`INVALID_REQUEST_BODY`)', 501: NOT_SERVED, 503: 'no capacity: no warm container free in time, or the dedicated cap reached (`RUNTIME_ERROR`)' },
    },
    'GET /v1/sandboxes': {
      summary: 'List sandboxes, filtered and paged',
      params: [
        { name: 'state', in: 'query', description: 'repeat for several', schema: STATE },
        { name: 'metadata', in: 'query', description: 'key=value&key2=value2, URL-encoded', schema: STRING },
        { name: 'page', in: 'query', description: 'from 1', schema: { type: 'integer', minimum: 1 } },
        { name: 'pageSize', in: 'query', description: '1 to 1000, default 20', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
      ],
      responses: {
        200: {
          description: 'one page',
          schema: object({ items: arrayOf(ref('Sandbox')), pagination: object({ page: INTEGER, pageSize: INTEGER, totalItems: INTEGER, totalPages: INTEGER, hasNextPage: BOOLEAN }) }),
          example: { items: [], pagination: { page: 1, pageSize: 20, totalItems: 0, totalPages: 0, hasNextPage: false } },
        },
      },
      errors: { 400: 'a bad filter or page (`INVALID_REQUEST_BODY`)' },
    },
    'GET /v1/sandboxes/:id': { summary: 'A sandbox', responses: { 200: { description: 'the sandbox', schema: ref('Sandbox') } }, errors: SANDBOX_ERRORS },
    'DELETE /v1/sandboxes/:id': { summary: 'Delete a sandbox', responses: { 204: { description: 'deleted' } }, errors: SANDBOX_ERRORS },
    'PATCH /v1/sandboxes/:id/metadata': {
      summary: 'Merge-patch its metadata (a string sets, null deletes)',
      body: { schema: { type: 'object', additionalProperties: { type: ['string', 'null'] } }, example: { team: 'rl', old: null } },
      responses: { 200: { description: 'the sandbox', schema: ref('Sandbox') } },
      errors: { ...SANDBOX_ERRORS, 400: 'a bad key or value (`INVALID_REQUEST_BODY`)' },
    },
    'POST /v1/sandboxes/:id/pause': { summary: 'Pause it (docker)', responses: ACCEPTED, errors: { ...SANDBOX_ERRORS, 409: 'not in a state to pause (`RUNTIME_ERROR`)', 501: 'the local backend cannot pause (`NOT_SUPPORTED`)' } },
    'POST /v1/sandboxes/:id/resume': { summary: 'Resume it (docker)', responses: ACCEPTED, errors: { ...SANDBOX_ERRORS, 409: 'not paused (`RUNTIME_ERROR`)', 501: 'the local backend cannot resume (`NOT_SUPPORTED`)' } },
    'POST /v1/sandboxes/:id/renew-expiration': {
      summary: 'Move its expiry',
      body: { schema: object({ expiresAt: AT }), example: { expiresAt: '2030-01-01T00:00:00Z' } },
      responses: { 200: { description: 'the new expiry', schema: object({ expiresAt: AT }), example: { expiresAt: '2030-01-01T00:00:00.000Z' } } },
      errors: { ...SANDBOX_ERRORS, 400: 'not an RFC 3339 time, or past the maximum (`INVALID_REQUEST_BODY`)' },
    },
    'GET /v1/sandboxes/:id/endpoints/:port': {
      summary: "Where to reach a port of the sandbox (execd's 44772 and egress's 18080 are the broker's routes)",
      params: [{ name: 'use_server_proxy', in: 'query', description: 'true or false (the same answer either way)', schema: { enum: ['true', 'false'] } }],
      responses: { 200: { description: 'the endpoint, without a scheme', schema: object({ endpoint: STRING, headers: STRINGS }), example: { endpoint: `127.0.0.1:8180/sandboxes/${ID}/execd`, headers: {} } } },
      errors: { 400: 'a bad port or query (`INVALID_REQUEST_BODY`)', 404: 'no such sandbox, it is not running, or nothing listens on the port (`NOT_FOUND`)', 501: 'signed endpoints (expires) (`NOT_SUPPORTED`)' },
    },
    'POST /v1/sandboxes/:id/snapshots': unserved('Snapshots: not served'),
    'GET /v1/snapshots': unserved('Snapshots: not served'),
    'GET /v1/snapshots/:snapshotId': unserved('Snapshots: not served'),
    'DELETE /v1/snapshots/:snapshotId': unserved('Snapshots: not served'),
    'POST /v1/metrics/events': { summary: "The SDK's create-latency telemetry: taken and dropped", body: { schema: {}, required: false }, responses: { 204: { description: 'taken' } } },
    ...EGRESS,
    ...PROXY,
  },
};
