/**
 * OpenSandbox's lifecycle API (/v1), each route's contract written once: the routes served
 * (lifecycleRoutes.ts), its snapshots' (lifecycleSnapshotContract.ts), the parts answered 501
 * (unservedRoutes.ts: the egress sidecar's vault)
 * and the proxy to a sandbox's other ports (portProxy.ts), with their inputs, answers and the errors
 * they answer in OpenSandbox's `{code, message}` envelope. The bodies are checked against these
 * schemas (lifecycleInput.ts; a create's, with its rules, in createRequest.ts), and /openapi.json shows them.
 */
import { Type } from '@sinclair/typebox';
import { arrayOf, object, ref, STRING, type ReplyDoc, type Schema } from '../../http/openApiTypes';
import type { ApiContract, ContractMethod, RouteContract } from '../../http/contract';
import { createSandboxRequest, NOT_AN_OBJECT } from './createRequest';
import { EGRESS_POLICY_ROUTES } from './egressContract';
import { LIFECYCLE_SNAPSHOT_ROUTES, PAGING_PARAMS, pageOf, SNAPSHOT } from './lifecycleSnapshotContract';

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
    snapshotId: { type: 'string', description: 'the snapshot it was restored from (then no image)' },
  },
  required: ['id', 'status', 'metadata', 'entrypoint', 'createdAt'],
  additionalProperties: false,
};

/** POST /v1/sandboxes/{id}/renew-expiration (RenewSandboxExpirationRequest): `x-renew-fields` refuses other fields and a missing expiresAt first. */
export const RENEW_BODY = Type.Object(
  {
    expiresAt: Type.String({
      format: 'date-time',
      'x-refusal': { '*': 'expiresAt must be an RFC 3339 time such as 2025-11-16T14:30:45Z, got {json}' },
    }),
  },
  { additionalProperties: false, 'x-renew-fields': true, 'x-refusal': { type: NOT_AN_OBJECT } },
);

export const LABEL_VALUE = '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$';

/** PATCH /v1/sandboxes/{id}/metadata, a JSON merge patch: each entry checked in order by `x-metadata-patch` (its key, then its value). */
export const METADATA_PATCH_BODY = Type.Unsafe<Record<string, string | null>>({
  type: 'object',
  additionalProperties: { type: ['string', 'null'], maxLength: 63, pattern: LABEL_VALUE },
  'x-metadata-patch': true,
  'x-refusal': { type: NOT_AN_OBJECT },
});

function unserved(method: ContractMethod, path: string, summary: string): RouteContract {
  return { method, path, summary, responses: {}, errors: { 404: 'no such sandbox (`NOT_FOUND`)', 501: NOT_SERVED } };
}

const routes = {
  create: {
    method: 'POST',
    path: '/v1/sandboxes',
    gateway: 'create',
    summary: 'Create a sandbox',
    body: { schema: ref('CreateSandboxRequest'), example: { image: { uri: 'bash-broker-sandbox' }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600, resourceLimits: { cpu: '1', memory: '512Mi' } } },
    responses: { 202: { description: 'created (CreateSandboxResponse: the Sandbox without its image), Location: its URL', schema: ref('Sandbox') } },
    errors: { 400: 'a bad field, or a snapshotId that names no snapshot (`INVALID_REQUEST_BODY`)', 501: NOT_SERVED, 503: 'no capacity: no warm container free in time, or the dedicated cap reached (`RUNTIME_ERROR`)' },
  },
  list: {
    method: 'GET',
    path: '/v1/sandboxes',
    gateway: 'list-lifecycle',
    summary: 'List sandboxes, filtered and paged',
    params: [
      { name: 'state', in: 'query', description: 'repeat for several', schema: STATE },
      { name: 'metadata', in: 'query', description: 'key=value&key2=value2, URL-encoded', schema: STRING },
      ...PAGING_PARAMS,
    ],
    responses: { 200: pageOf('Sandbox', []) },
    errors: { 400: 'a bad filter or page (`INVALID_REQUEST_BODY`)' },
  },
  get: { method: 'GET', path: '/v1/sandboxes/:id', summary: 'A sandbox', responses: { 200: { description: 'the sandbox', schema: ref('Sandbox') } }, errors: SANDBOX_ERRORS },
  delete: { method: 'DELETE', path: '/v1/sandboxes/:id', summary: 'Delete a sandbox', responses: { 204: { description: 'deleted' } }, errors: SANDBOX_ERRORS },
  patchMetadata: {
    method: 'PATCH',
    path: '/v1/sandboxes/:id/metadata',
    summary: 'Merge-patch its metadata (a string sets, null deletes)',
    body: { schema: METADATA_PATCH_BODY, example: { team: 'rl', old: null } },
    responses: { 200: { description: 'the sandbox', schema: ref('Sandbox') } },
    errors: { ...SANDBOX_ERRORS, 400: 'a bad key or value (`INVALID_REQUEST_BODY`)' },
  },
  pause: { method: 'POST', path: '/v1/sandboxes/:id/pause', summary: 'Pause it (docker)', responses: ACCEPTED, errors: { ...SANDBOX_ERRORS, 409: 'not in a state to pause (`RUNTIME_ERROR`)', 501: 'the local backend cannot pause (`NOT_SUPPORTED`)' } },
  resume: { method: 'POST', path: '/v1/sandboxes/:id/resume', summary: 'Resume it (docker)', responses: ACCEPTED, errors: { ...SANDBOX_ERRORS, 409: 'not paused (`RUNTIME_ERROR`)', 501: 'the local backend cannot resume (`NOT_SUPPORTED`)' } },
  renew: {
    method: 'POST',
    path: '/v1/sandboxes/:id/renew-expiration',
    summary: 'Move its expiry',
    body: { schema: RENEW_BODY, example: { expiresAt: '2030-01-01T00:00:00Z' } },
    responses: { 200: { description: 'the new expiry', schema: object({ expiresAt: AT }), example: { expiresAt: '2030-01-01T00:00:00.000Z' } } },
    errors: { ...SANDBOX_ERRORS, 400: 'not an RFC 3339 time, or past the maximum (`INVALID_REQUEST_BODY`)' },
  },
  endpoint: {
    method: 'GET',
    path: '/v1/sandboxes/:id/endpoints/:port',
    summary: "Where to reach a port of the sandbox (execd's 44772 and egress's 18080 are the broker's routes)",
    params: [{ name: 'use_server_proxy', in: 'query', description: 'true or false (the same answer either way)', schema: { enum: ['true', 'false'] } }],
    responses: { 200: { description: 'the endpoint, without a scheme', schema: object({ endpoint: STRING, headers: STRINGS }), example: { endpoint: `127.0.0.1:8180/sandboxes/${ID}/execd`, headers: {} } } },
    errors: { 400: 'a bad port or query (`INVALID_REQUEST_BODY`)', 404: 'no such sandbox, it is not running, or nothing listens on the port (`NOT_FOUND`)', 501: 'signed endpoints (expires) (`NOT_SUPPORTED`)' },
  },
  ...LIFECYCLE_SNAPSHOT_ROUTES,
  // Taken unread: the seam does not parse it.
  metricsEvents: { method: 'POST', path: '/v1/metrics/events', gateway: 'any', summary: "The SDK's create-latency telemetry: taken and dropped", body: { schema: {}, required: false }, responses: { 204: { description: 'taken' } }, readsJson: false },
} satisfies Record<string, RouteContract>;

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const EGRESS_PATHS = ['policy', 'credential-vault', 'credential-vault/credentials', 'credential-vault/credentials/:name', 'credential-vault/bindings', 'credential-vault/bindings/:name'];

/** `/sandboxes/{id}/egress/...` (where the egress port's endpoint leads), every method: 501, but the policy's GET, PATCH and DELETE (egressContract.ts). */
export const EGRESS_ROUTES: readonly RouteContract[] = EGRESS_PATHS.flatMap((p) =>
  METHODS.filter((m) => p !== 'policy' || !Object.values(EGRESS_POLICY_ROUTES).some((r) => r.method === m)).map((m) => unserved(m, `/sandboxes/:id/egress/${p}`, 'The egress sidecar (where the egress endpoint leads): not served')),
);

const PROXY_PATH = '/sandboxes/:id/port/:port/*path';

/** `/sandboxes/{id}/port/{port}/...`, every method, and its WebSocket. */
export const PORT_PROXY_ROUTES: readonly RouteContract[] = [
  ...METHODS.map(
    (method): RouteContract => ({
      method,
      path: PROXY_PATH,
      summary: "Proxy to a port of the sandbox (its endpoint): the request and answer streamed as they are; the broker's token is not passed on",
      responses: { default: { description: "the service's own answer" } },
      errors: { 400: 'not a port number (`INVALID_REQUEST_BODY`)', 404: 'no such sandbox, or nothing listens on the port (`NOT_FOUND`)', 502: 'the service failed mid-answer (`RUNTIME_ERROR`)' },
    }),
  ),
  { method: 'WS', path: PROXY_PATH, summary: 'WebSocket to a port of the sandbox, messages relayed both ways', responses: { 101: { description: 'Switching Protocols' } } },
];

export const LIFECYCLE_CONTRACT: ApiContract<typeof routes & Record<string, RouteContract>> = {
  tag: 'lifecycle',
  description: "OpenSandbox's lifecycle API (/v1): sandboxes from a warm pool, a dedicated container or a snapshot, their expiry, pause and resume, their endpoints and their snapshots. The token may come as OPEN-SANDBOX-API-KEY.",
  errors: 'opensandbox',
  pathPrefix: '/v1',
  // A sandbox's calls (its ports' and egress' under /sandboxes too) go to the node its id names.
  gateway: 'id',
  pathParams: {
    id: { description: 'a sandbox id', example: ID },
    port: { description: 'a port of the sandbox', example: '8080', schema: { type: 'string', pattern: '^\\d{1,5}$' } },
    snapshotId: { description: 'a snapshot id', example: 'snap-0123456789abcdef' },
    name: { description: 'a credential or binding name', example: 'github' },
    path: { description: 'the rest of the path, slashes included (may be empty)', example: 'index.html' },
  },
  schemas: { Sandbox: SANDBOX, Snapshot: SNAPSHOT, CreateSandboxRequest: createSandboxRequest() },
  routes: { ...routes, ...Object.fromEntries([...EGRESS_ROUTES, ...Object.values(EGRESS_POLICY_ROUTES), ...PORT_PROXY_ROUTES].map((r) => [`${r.method} ${r.path}`, r])) },
};
