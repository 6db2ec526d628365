/**
 * Assembles the HTTP request listener: the pool API on plain node:http (the hot path), everything
 * else (health, metrics, 404, errors) through express.
 */
import type { RequestListener } from 'node:http';
import express from 'express';
import type { SessionPool } from '../core/pool';
import type { BrokerMetrics } from '../metrics/metrics';
import type { BrokerConfig } from '../config/config';
import { requireToken, tokenChecker } from './auth';
import { poolRoutes } from './poolRoutes';
import { healthRouter } from './healthRoutes';
import { errorHandler, notFound } from './errorHandler';

export function createApp(pool: SessionPool, metrics: BrokerMetrics, config: BrokerConfig): RequestListener {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // hashing every response buys a client nothing
  if (config.token) app.use(requireToken(config.token, config.metricsPublic));
  app.use(healthRouter(pool, metrics));
  app.use(notFound);
  app.use(errorHandler);

  const servePool = poolRoutes(pool, {
    limits: {
      defaultTimeoutSeconds: config.defaultCommandTimeoutMs / 1000,
      maxTimeoutSeconds: config.maxCommandTimeoutMs / 1000,
      maxCommandBytes: config.maxCommandBytes,
    },
    maxBodyBytes: config.maxBodyBytes,
    authorized: config.token ? tokenChecker(config.token) : null,
  });
  return (req, res) => {
    if (!servePool(req, res)) app(req, res);
  };
}
