/** GET /health (the spec's fields, exactly) and GET /metrics (Prometheus text). */
import { Router } from 'express';
import type { SessionPool } from '../core/pool';
import type { BrokerMetrics } from '../metrics/metrics';

export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy';

/**
 * unhealthy: shutting down, or no container answers, or no session can be served now or soon;
 * degraded: serving, but some sessions are BROKEN, some containers are unhealthy, or the pool is
 *           still warming up (fewer sessions than configured);
 * healthy:  every configured session exists and none is broken, every container answers.
 */
export function healthReport(pool: SessionPool) {
  const { counts, healthyContainers, unhealthyContainers } = pool.health();
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
  };
}

export function healthRouter(pool: SessionPool, metrics: BrokerMetrics): Router {
  const router = Router();
  router.get('/health', (_req, res) => {
    const report = healthReport(pool);
    res.status(report.status === 'unhealthy' ? 503 : 200).json(report);
  });
  router.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', metrics.registry.contentType);
    res.send(await metrics.registry.metrics());
  });
  return router;
}
