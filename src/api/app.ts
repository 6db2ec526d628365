/** Assembles the HTTP application: body reading, the facades' routers, 404 and the error handler. */
import express, { type Express } from 'express';
import type { SessionPool } from '../core/pool';
import type { BrokerMetrics } from '../metrics/metrics';
import type { BrokerConfig } from '../config/config';
import { jsonBody } from './body';
import { requireToken } from './auth';
import { poolRouter } from './poolRoutes';
import { healthRouter } from './healthRoutes';
import { errorHandler, notFound } from './errorHandler';

export function createApp(pool: SessionPool, metrics: BrokerMetrics, config: BrokerConfig): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // hashing every execute response buys a client nothing
  // Auth before the body is read: an unauthenticated client cannot make us buffer 64 MiB.
  if (config.token) app.use(requireToken(config.token, config.metricsPublic));
  app.use(jsonBody(config.maxBodyBytes));
  app.use(healthRouter(pool, metrics));
  app.use(
    poolRouter(pool, {
      defaultTimeoutSeconds: config.defaultCommandTimeoutMs / 1000,
      maxTimeoutSeconds: config.maxCommandTimeoutMs / 1000,
      maxCommandBytes: config.maxCommandBytes,
    }),
  );
  app.use(notFound);
  app.use(errorHandler);
  return app;
}
