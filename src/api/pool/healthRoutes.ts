/**
 * GET /health (the pool API's fields, then the broker's additive ones: backpressure, reclaims, and
 * `warmup` while the pool's first fill runs, and `pools` when BROKER_POOLS names others; always
 * public) and GET /metrics (Prometheus text).
 */
import type { SessionPool } from '../../core/pool/pool';
import type { PoolRegistry } from '../../core/pool/poolRegistry';
import type { BrokerMetrics } from '../../metrics/metrics';
import { sendJson } from '../../http/httpJson';
import type { Router } from '../../http/router';
import { apiErrors, served } from '../../http/contract';
import { HEALTH_CONTRACT } from './healthContract';
import type { NetworkReport } from '../../core/ports/sessionNetworks';

const R = HEALTH_CONTRACT.routes;
import type { ImagesReport } from '../../core/images/imageViews';

export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy';

/**
 * unhealthy: shutting down, or no container answers, or no session can be served now or soon;
 * degraded: serving, but some sessions are BROKEN, some containers are unhealthy, or the pool is
 *           still warming up (fewer sessions than configured);
 * healthy:  every configured session exists and none is broken, every container answers.
 */
export function healthReport(pool: SessionPool) {
  const { counts, healthyContainers, unhealthyContainers } = pool.health();
  const stats = pool.stats();
  const warmup = pool.warmup;
  const serving = counts.available + counts.in_use + counts.cleaning;
  let status: HealthStatus = 'healthy';
  if (pool.isClosing || serving === 0 || healthyContainers === 0) status = 'unhealthy';
  else if (counts.broken > 0 || unhealthyContainers > 0 || counts.total < pool.targetSessions) status = 'degraded';
  return {
    status,
    total_sessions: counts.total,
    available_sessions: counts.available,
    in_use_sessions: counts.in_use,
    cleaning_sessions: counts.cleaning,
    broken_sessions: counts.broken,
    healthy_containers: healthyContainers,
    unhealthy_containers: unhealthyContainers,
    // Additive to the pool API's fields (its clients ignore them): backpressure and reclaims.
    queue_length: stats.waiting,
    acquire_wait_p50_ms: stats.waitP50Ms === null ? null : Math.round(stats.waitP50Ms * 1000) / 1000,
    reclaimed_sessions: stats.reclaimed,
    // Beside the pool API's fields, only while the first fill runs (a client reading those fields is unaffected).
    ...(warmup ? { warmup } : {}),
    // Only where the backend can isolate leases: whether it does, and why a container does not.
    ...isolationField(pool),
  };
}

function isolationField(pool: SessionPool) {
  const report = pool.isolation();
  if (!report?.enabled) return {};
  return {
    isolation: {
      enabled: report.enabled,
      isolated_containers: report.isolatedContainers,
      unisolated_containers: report.unisolatedContainers,
      refusal: report.refusal,
      disk_bytes_per_session: report.diskBytesPerSession,
      shared_paths: report.sharedPaths,
      // Where the backend gives sessions networks of their own (docs/isolation.md).
      ...(report.network ? { network: networkField(report.network) } : {}),
      // Releases rolled back in their session's own namespaces (docs/isolation.md, Rewinds).
      ...(report.rewoundReleases !== undefined ? { rewound_releases: report.rewoundReleases } : {}),
      ...(report.sessionLimits ? { session_limits: { memory_bytes: report.sessionLimits.memoryBytes, cpus: report.sessionLimits.cpus, refusal: report.sessionLimits.refusal } } : {}),
    },
  };
}

function networkField(n: NetworkReport) {
  return { policy: n.policy, own_network_containers: n.ownNetworkContainers, routed_containers: n.routedContainers, shared_network_containers: n.sharedNetworkContainers, refusal: n.refusal };
}

/**
 * The default pool's report, and with named pools each one's counts under `pools` (the default one
 * too, by its name): one that is not healthy makes a healthy broker `degraded`.
 */
export function brokerHealth(pools: PoolRegistry, images?: () => ImagesReport): ReturnType<typeof healthReport> & { pools?: Record<string, object>; images?: object } {
  const report: ReturnType<typeof healthReport> & { pools?: Record<string, object>; images?: object } = healthReport(pools.main.pool);
  const imagesPart = images?.();
  // Only where on-demand images are on: beside the pool API's fields, as `pools` is.
  if (imagesPart?.on_demand) report.images = imagesHealth(imagesPart);
  if (pools.named.length === 0) return report;
  report.pools = {};
  for (const entry of pools.entries) {
    const { status, ...counts } = healthReport(entry.pool);
    if (entry !== pools.main && status !== 'healthy' && report.status === 'healthy') report.status = 'degraded';
    report.pools[entry.name] = { status, image: entry.image, ...counts };
  }
  return report;
}

/** /health's `images`: pulls, disk against the budget, evictions, and each live image pool's sessions. */
function imagesHealth(r: ImagesReport): object {
  const pools: Record<string, { containers: number; warm_sessions: number; leased_sessions: number }> = {};
  for (const v of r.images) if (v.containers > 0) pools[v.image] = { containers: v.containers, warm_sessions: v.warm_sessions, leased_sessions: v.leased_sessions };
  return {
    pulls_in_flight: r.pulls_in_flight,
    images_held: r.images_held,
    disk_used_bytes: r.disk_used_bytes,
    disk_budget_bytes: r.disk_budget_bytes,
    evictions: r.evictions,
    pools,
  };
}

/** `metricsPublic`: /metrics without a token (BROKER_METRICS_PUBLIC=1), for a scraper that cannot send one. */
export function healthRouter(pools: PoolRegistry, metrics: BrokerMetrics, { metricsPublic, images }: { metricsPublic: boolean; images?: () => ImagesReport }): Router {
  return {
    name: 'health',
    ...apiErrors(HEALTH_CONTRACT),
    routes: [
      served(R.health, ({ res }) => {
        const report = brokerHealth(pools, images);
        sendJson(res, report.status === 'unhealthy' ? 503 : 200, report);
      }),
      served(
        R.metrics,
        async ({ res }) => {
          const text = await metrics.registry.metrics();
          res.writeHead(200, { 'Content-Type': metrics.registry.contentType, 'Content-Length': Buffer.byteLength(text) });
          res.end(text);
        },
        { metricsPublic },
      ),
    ],
  };
}
