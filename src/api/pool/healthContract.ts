/**
 * GET /health and GET /metrics, each route's contract written once: healthRoutes.ts serves them, and
 * /openapi.json shows them. A gateway answers both itself, for the cluster (cluster/gateway).
 */
import { INTEGER, nullable, NUMBER, object } from '../../http/openApiTypes';
import { PUBLIC_WITH_METRICS, type ApiContract, type RouteContract } from '../../http/contract';

const COUNT = { type: 'integer', minimum: 0 };
const HEALTH = {
  type: 'object',
  description: "The pool API's fields, then the broker's additive ones (the pool API's clients ignore them).",
  properties: {
    status: { enum: ['healthy', 'degraded', 'unhealthy'] },
    total_sessions: COUNT,
    available_sessions: COUNT,
    in_use_sessions: COUNT,
    cleaning_sessions: COUNT,
    broken_sessions: COUNT,
    healthy_containers: COUNT,
    unhealthy_containers: COUNT,
    queue_length: COUNT,
    acquire_wait_p50_ms: nullable(NUMBER),
    reclaimed_sessions: object({ idle_timeout: INTEGER, lease_ttl: INTEGER, operator: INTEGER }, ['idle_timeout', 'lease_ttl'], true),
    warmup: {
      ...object({ target_sessions: COUNT, ready_sessions: COUNT, failed_sessions: COUNT, elapsed_seconds: NUMBER, sessions_per_second: nullable(NUMBER), seconds_left: nullable(NUMBER) }),
      description: "only while the pool's first fill runs",
    },
    pools: { type: 'object', additionalProperties: { type: 'object' }, description: "with BROKER_POOLS: each pool's own report (status, image and counts) by name" },
    images: {
      ...object({ pulls_in_flight: COUNT, images_held: COUNT, disk_used_bytes: COUNT, disk_budget_bytes: COUNT, evictions: COUNT, pools: { type: 'object', additionalProperties: { type: 'object' } } }),
      description: 'where images are pulled on demand (docs/images.md): pulls, disk against its budget, evictions, and each live image pool (containers, warm and leased sessions) by image',
    },
  },
  required: ['status', 'total_sessions', 'available_sessions', 'in_use_sessions', 'cleaning_sessions', 'broken_sessions', 'healthy_containers', 'unhealthy_containers'],
};
const EXAMPLE = {
  status: 'healthy',
  total_sessions: 32,
  available_sessions: 30,
  in_use_sessions: 2,
  cleaning_sessions: 0,
  broken_sessions: 0,
  healthy_containers: 4,
  unhealthy_containers: 0,
  queue_length: 0,
  acquire_wait_p50_ms: 0.02,
  reclaimed_sessions: { idle_timeout: 0, lease_ttl: 0, operator: 0 },
};

const routes = {
  health: {
    method: 'GET',
    path: '/health',
    public: true,
    summary: 'Pool health (always public)',
    responses: {
      200: { description: 'healthy or degraded', schema: { $ref: '#/components/schemas/Health' }, example: EXAMPLE },
      503: { description: 'unhealthy: shutting down, no container answers, or no session can be served', schema: { $ref: '#/components/schemas/Health' } },
    },
  },
  metrics: {
    method: 'GET',
    path: '/metrics',
    public: PUBLIC_WITH_METRICS,
    summary: 'Prometheus metrics (public with BROKER_METRICS_PUBLIC=1)',
    responses: {
      200: {
        description: 'Prometheus text exposition format',
        contentType: 'text/plain; version=0.0.4; charset=utf-8',
        schema: { type: 'string' },
        example: 'broker_sessions{state="available"} 30\n',
      },
    },
  },
} satisfies Record<string, RouteContract>;

export const HEALTH_CONTRACT: ApiContract<typeof routes> = {
  tag: 'health',
  description: 'The pool at a glance, and Prometheus metrics.',
  errors: 'pool',
  // A gateway's own: the cluster's health, and its own metrics.
  gateway: 'gateway',
  schemas: { Health: HEALTH },
  routes,
};
