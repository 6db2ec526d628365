/**
 * The broker's HTTP surface: which routers are mounted, over the one seam (seam.ts). A new API is a
 * router file in this folder and one line in `brokerRouters`.
 */
import type { RequestListener } from 'node:http';
import type { SessionPool } from '../core/pool';
import type { BrokerMetrics } from '../metrics/metrics';
import type { BrokerConfig } from '../config/config';
import { createAuthorize } from './auth';
import { poolErrorFormat } from './errorFormats';
import { HttpSeam } from './seam';
import type { Router } from './router';
import { poolRouter } from './poolRoutes';
import { healthRouter } from './healthRoutes';
import { workspaceRouter } from './workspaceRoutes';
import { workspacePageRouter } from './workspacePage';
import type { WorkspaceApi } from '../core/workspace/workspaceApi';
import type { Orchestrator } from '../core/orchestrator/orchestrator';
import { orchestratorRouter } from './orchestratorRoutes';

/**
 * `workspaces`: the workspace API (spec 000), `orchestrator`: sandbox groups (spec 001), each
 * mounted when given (the bench's app floor has neither).
 */
export function brokerRouters(pool: SessionPool, metrics: BrokerMetrics, config: BrokerConfig, workspaces?: WorkspaceApi, orchestrator?: Orchestrator): Router[] {
  const limits = {
    defaultTimeoutSeconds: config.defaultCommandTimeoutMs / 1000,
    maxTimeoutSeconds: config.maxCommandTimeoutMs / 1000,
    maxCommandBytes: config.maxCommandBytes,
  };
  const routers = [poolRouter(pool, limits), healthRouter(pool, metrics, { metricsPublic: config.metricsPublic })];
  if (workspaces) {
    routers.push(workspaceRouter(workspaces.workspaces, workspaces.files, { maxCommandBytes: config.maxCommandBytes, viewerBufferBytes: config.workspace.viewerBufferBytes }));
    routers.push(workspacePageRouter());
  }
  if (orchestrator) routers.push(orchestratorRouter(orchestrator));
  return routers;
}

/** `extraRouters` mount beside the broker's own (tests mount routes of their own this way). */
export function createSeam(
  pool: SessionPool,
  metrics: BrokerMetrics,
  config: BrokerConfig,
  extraRouters: Router[] = [],
  workspaces?: WorkspaceApi,
  orchestrator?: Orchestrator,
): HttpSeam {
  return new HttpSeam([...brokerRouters(pool, metrics, config, workspaces, orchestrator), ...extraRouters], {
    authorize: createAuthorize(config.token),
    maxBodyBytes: config.maxBodyBytes,
    // Requests no router's prefix claims get the pool API's format, as they always have.
    defaultErrors: poolErrorFormat,
  });
}

/** The request listener alone (the bench measures it over a stub pool). */
export function createApp(pool: SessionPool, metrics: BrokerMetrics, config: BrokerConfig): RequestListener {
  return createSeam(pool, metrics, config).serveRequest;
}
