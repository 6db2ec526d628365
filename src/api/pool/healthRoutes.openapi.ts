/** GET /health and GET /metrics (healthRoutes.ts) for /openapi.json. */
import { INTEGER, nullable, NUMBER, object, type ApiDoc } from '../../http/openApiTypes';

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

export const HEALTH_API_DOC: ApiDoc = {
  tag: 'health',
  description: 'The pool at a glance, and Prometheus metrics.',
  errors: 'pool',
  schemas: { Health: HEALTH },
  operations: {
    'GET /health': {
      summary: 'Pool health (always public)',
      responses: {
        200: { description: 'healthy or degraded', schema: { $ref: '#/components/schemas/Health' }, example: EXAMPLE },
        503: { description: 'unhealthy: shutting down, no container answers, or no session can be served', schema: { $ref: '#/components/schemas/Health' } },
      },
    },
    'GET /metrics': {
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
  },
};
