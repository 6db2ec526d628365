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
import type { ExecdFilesApi } from '../core/execd/execdFilesApi';
import type { SandboxDirectory } from '../core/sandboxHandle';
import { execdFileRouter } from './execd/execdFileRoutes';
import { execdMetricsRouter } from './execd/execdMetricsRoutes';
import type { TaskService } from '../core/tasks/taskService';
import { taskRouter } from './taskRoutes';

/**
 * `workspaces`: the workspace API (spec 000), `execdFiles`: execd's files and metrics (spec 004),
 * `tasks`: task sandboxes (spec 002), each mounted when given (the bench's app floor has none).
 */
export function brokerRouters(
  pool: SessionPool,
  metrics: BrokerMetrics,
  config: BrokerConfig,
  workspaces?: WorkspaceApi,
  execdFiles?: ExecdFilesApi,
  tasks?: TaskService,
): Router[] {
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
  // Pool sessions now; a composite that also knows lifecycle sandboxes later.
  const sandboxes: SandboxDirectory = { resolve: (id) => pool.site(id) };
  if (execdFiles) routers.push(execdFileRouter(sandboxes, execdFiles.files));
  if (execdFiles) routers.push(execdMetricsRouter(sandboxes, execdFiles.metrics));
  if (tasks) routers.push(taskRouter(tasks, { keepAliveMs: config.tasks.keepAliveMs }));
  return routers;
}

/** `extraRouters` mount beside the broker's own (tests mount routes of their own this way). */
export function createSeam(
  pool: SessionPool,
  metrics: BrokerMetrics,
  config: BrokerConfig,
  extraRouters: Router[] = [],
  workspaces?: WorkspaceApi,
  execdFiles?: ExecdFilesApi,
  tasks?: TaskService,
): HttpSeam {
  return new HttpSeam([...brokerRouters(pool, metrics, config, workspaces, execdFiles, tasks), ...extraRouters], {
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
