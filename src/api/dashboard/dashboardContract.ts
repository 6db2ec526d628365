/**
 * The dashboard's page and its operator routes, each route's contract written once: dashboardRoutes.ts
 * serves them, and /openapi.json shows them. A gateway serves the cluster's own page (clusterDashboard.ts)
 * and sends the operator's routes to the home node, where the dashboard's state lives, or by the lease's id.
 */
import { arrayOf, BOOLEAN, INTEGER, nullable, NUMBER, object, ref, STRING, type Schema } from '../../http/openApiTypes';
import type { ApiContract, RouteContract } from '../../http/contract';

const ID = 'f3c1d2e4a5b6978812345678abcdef01';
const SERIES: Schema = { ...arrayOf(NUMBER), description: 'one value a second for the last minute, oldest first' };
const MS = nullable(NUMBER);
const AT: Schema = { type: 'string', format: 'date-time' };

const FRAME: Schema = object({
  status: { enum: ['healthy', 'degraded', 'unhealthy'], description: "/health's status" },
  at: AT,
  pool: { ...object({ available: INTEGER, in_use: INTEGER, cleaning: INTEGER, broken: INTEGER, total: INTEGER, target: INTEGER, closing: BOOLEAN }), description: 'every pool together' },
  pools: arrayOf(object({ name: STRING, available: INTEGER, in_use: INTEGER, cleaning: INTEGER, broken: INTEGER, total: INTEGER, target: INTEGER, waiting: INTEGER })),
  containers: arrayOf(
    object({ pool: STRING, index: INTEGER, healthy: BOOLEAN, replacing: BOOLEAN, reason: nullable(STRING), slots: { type: 'string', pattern: '^[AUCB]*$', description: 'one letter a slot: Available, in Use, Cleaning, Broken' } }),
  ),
  queue: object({ waiting: INTEGER, wait_p50_ms: MS, wait_p99_ms: MS, acquires_per_second: SERIES, timeouts_per_second: SERIES, wait_max_ms: arrayOf(MS) }),
  execute: object({ total: INTEGER, p50_ms: MS, p99_ms: MS, per_second: SERIES, failed_per_second: SERIES }),
  reclaimed: { type: 'object', additionalProperties: INTEGER },
  leases: object({
    count: INTEGER,
    items: arrayOf(
      object({
        session_id: STRING,
        pool: STRING,
        holder: { enum: ['client', 'taken out'], description: "taken out: a workspace's or a lifecycle sandbox's slot, ended with its owner" },
        container: nullable(INTEGER),
        slot: nullable(STRING),
        age_s: NUMBER,
        idle_s: nullable(NUMBER),
        executing: BOOLEAN,
        lease_ttl_s: nullable(NUMBER),
        broken: nullable(STRING),
      }),
    ),
  }),
  errors: arrayOf(object({ at: AT, kind: STRING, message: STRING })),
  replaced: arrayOf(object({ at: AT, pool: STRING, container: INTEGER, reason: STRING })),
  workspaces: arrayOf(object({ workspace_id: STRING, workdir: STRING, running_job_id: nullable(STRING) })),
  sandboxes: arrayOf(object({ kind: STRING, id: STRING, detail: STRING })),
  images: { type: 'array', items: { type: 'object' }, description: 'the images the node holds, pulls and warms, as GET /images lists them (docs/images.md)' },
});

const LEASE_ERRORS = { 400: 'the lease ended already (`session_not_in_use`)', 404: 'no such lease (`session_not_found`)', 409: "a workspace's or a lifecycle sandbox's slot: end its owner (`lease_taken_out`)" };
const IGNORED = { schema: {}, required: false, description: 'any JSON, ignored' };

const routes = {
  page: { method: 'GET', path: '/ui', public: true, gateway: 'gateway', summary: 'The dashboard page (public: it holds no data; it asks for the token)', responses: { 200: { description: 'the page', contentType: 'text/html', schema: STRING } } },
  asset: {
    method: 'GET',
    path: '/ui/dashboard/:asset',
    public: true,
    gateway: 'gateway',
    summary: "The dashboard's script and style",
    responses: { 200: { description: 'the file', contentType: 'text/javascript', schema: STRING } },
    errors: { 404: 'no such asset (`asset_not_found`)' },
  },
  state: { method: 'GET', path: '/admin/state', summary: 'The whole picture now (one dashboard frame)', responses: { 200: { description: 'the frame', schema: ref('DashboardFrame') } } },
  live: {
    method: 'WS',
    path: '/admin/live',
    summary: 'WebSocket: one frame a second, `{"type": "frame", "frame": DashboardFrame}` (a browser offers the token as the subprotocol bearer.<token>)',
    responses: { 101: { description: 'Switching Protocols' } },
  },
  release: {
    method: 'POST',
    path: '/admin/leases/:sessionId/release',
    gateway: 'id',
    summary: 'Release a lease (as if its holder had)',
    body: IGNORED,
    responses: { 200: { description: 'released', schema: object({ session_id: STRING, status: { const: 'released' } }) } },
    errors: LEASE_ERRORS,
  },
  reclaim: {
    method: 'POST',
    path: '/admin/leases/:sessionId/reclaim',
    gateway: 'id',
    summary: 'Reclaim a lease: its holder is told so (reclaimed: operator), and it is counted',
    body: IGNORED,
    responses: { 200: { description: 'reclaimed', schema: object({ session_id: STRING, status: { const: 'reclaimed' } }) } },
    errors: LEASE_ERRORS,
  },
  replace: {
    method: 'POST',
    path: '/admin/containers/:index/replace',
    summary: 'Replace a container now: its leases break (410 to their holders), its sessions are rebuilt',
    params: [{ name: 'pool', in: 'query', description: 'the pool (BROKER_POOLS); absent: the default pool', schema: STRING }],
    body: IGNORED,
    responses: { 202: { description: 'replacing', schema: object({ container: INTEGER, pool: STRING, status: { const: 'replacing' } }) } },
    errors: { 400: 'not a container index (`bad_request`), or an unknown pool (`unknown_pool`)', 404: 'no such container (`container_not_found`)', 409: 'being replaced already (`container_replacing`)' },
  },
} satisfies Record<string, RouteContract>;

export const DASHBOARD_CONTRACT: ApiContract<typeof routes> = {
  tag: 'dashboard',
  description: 'The live dashboard (/ui) and the operator routes under /admin it reads and acts through.',
  errors: 'pool',
  // Its state and live feed must come from one node.
  gateway: 'home',
  pathParams: {
    sessionId: { description: 'a live lease (the dashboard lists them)', example: ID },
    index: { description: 'a container index, from 0', example: '0' },
    asset: { description: 'dashboard.js or dashboard.css', example: 'dashboard.js' },
  },
  schemas: { DashboardFrame: FRAME },
  routes,
};
