/**
 * The server side of the kernel comparison, one process forked by kernels/run.ts: a real Broker on
 * the local backend (real bash, 8 x 8 sessions) served by its current kernel exactly as it ships
 * (the Broker's own node:http server and seam, every router mounted), the same Broker's pools served
 * by fastify (fastifyPool.ts) on a second port, and a no-op node:http floor on a third. One process,
 * one pool: the kernels differ in their HTTP layer only, and one is idle while the other is measured.
 *
 * The ports come back over IPC once the pool is warm; on disconnect (or SIGTERM) every listener and
 * every shell is closed before the process exits.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Broker } from '../../src/broker';
import { loadConfig } from '../../src/config/config';
import { configureLogger } from '../../src/common/logger';
import { RequestIds } from '../../src/core/pool/requestIds';
import { fastifyPoolApp } from './fastifyPool';

export interface KernelPorts {
  current: number;
  fastify: number;
  noop: number;
  sessions: number;
  /** Paths in the OpenAPI document @fastify/swagger generated from the route schemas. */
  swaggerPaths: string[];
}

const EMPTY = Buffer.from('{}');

function noopServer(): http.Server {
  return http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': EMPTY.length });
      res.end(EMPTY);
    });
  });
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

async function main(): Promise<void> {
  const sessions = Number(process.argv[2] ?? 64);
  const env = { BROKER_BACKEND: 'local', PORT: '0', HOST: '127.0.0.1', BROKER_CONTAINERS: String(sessions / 8), BROKER_SESSIONS_PER_CONTAINER: '8', BROKER_LOG_LEVEL: 'warn', BROKER_DEPLOYMENT: 'bench-kernels' };
  const config = loadConfig(env);
  configureLogger(config.logLevel);
  const broker = new Broker(config);
  const current = (await broker.start()).port;
  await broker.warm();
  const limits = { defaultTimeoutSeconds: config.defaultCommandTimeoutMs / 1000, maxTimeoutSeconds: config.maxCommandTimeoutMs / 1000, maxCommandBytes: config.maxCommandBytes };
  const requestIds = new RequestIds({ windowMs: config.rollout.requestIdWindowMs, maxEntries: config.rollout.requestIdMax });
  const app = await fastifyPoolApp({ pools: broker.pools, limits, requestIds, token: config.token, maxBodyBytes: config.maxBodyBytes });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const fastifyPort = (app.server.address() as AddressInfo).port;
  const noop = noopServer();
  const noopPort = await listen(noop);
  const swaggerPaths = Object.keys((app.swagger() as { paths?: object }).paths ?? {});

  let closing = false;
  const shutdown = (): void => {
    if (closing) return;
    closing = true;
    noop.close();
    noop.closeAllConnections();
    Promise.allSettled([app.close(), broker.close()]).finally(() => process.exit(0));
  };
  process.on('disconnect', shutdown);
  process.on('SIGTERM', shutdown);
  const ports: KernelPorts = { current, fastify: fastifyPort, noop: noopPort, sessions, swaggerPaths };
  process.send?.(ports);
}

main().catch((err: unknown) => {
  console.error('kernel servers:', err);
  process.exit(1);
});
