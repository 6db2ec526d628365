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
import type { ExecdService } from '../core/execd/execdService';
import { execdCommandRouter } from './execd/execdCommandRoutes';
import { execdCodeRouter } from './execd/execdCodeRoutes';
import { DEFAULT_POOL, PoolRegistry } from '../core/poolRegistry';
import type { SandboxService } from '../core/lifecycle/sandboxService';
import { composeDirectories } from '../core/sandboxDirectory';
import type { SandboxDirectory } from '../core/sandboxHandle';
import { lifecycleRouter } from './lifecycle/lifecycleRoutes';
import { egressRouter } from './lifecycle/unservedRoutes';
import { portProxyRouter } from './lifecycle/portProxy';

/** Every pool (BROKER_POOLS) and the lifecycle API's sandboxes; without them, the default pool alone. */
export interface BrokerParts {
  pools: PoolRegistry;
  sandboxes?: SandboxService;
  /** The execd API of every sandbox (spec 004). */
  execd?: ExecdService;
}

/**
 * THE directory the per-sandbox APIs (execd) resolve their path's id through: lifecycle sandboxes,
 * then pool leases of every pool.
 */
export function sandboxDirectory(parts: BrokerParts): SandboxDirectory {
  return parts.sandboxes ? composeDirectories(parts.sandboxes, parts.pools) : parts.pools;
}

/**
 * `workspaces`: the workspace API (spec 000); `parts`: every pool, the lifecycle API and execd,
 * mounted when given (the bench's app floor has none of them).
 */
export function brokerRouters(pool: SessionPool, metrics: BrokerMetrics, config: BrokerConfig, workspaces?: WorkspaceApi, parts?: BrokerParts): Router[] {
  const pools = parts?.pools ?? new PoolRegistry({ name: DEFAULT_POOL, image: config.docker.image, pool, sessionsPerContainer: config.sessionsPerContainer, freshContainer: false });
  const limits = {
    defaultTimeoutSeconds: config.defaultCommandTimeoutMs / 1000,
    maxTimeoutSeconds: config.maxCommandTimeoutMs / 1000,
    maxCommandBytes: config.maxCommandBytes,
  };
  const routers = [poolRouter(pools, limits), healthRouter(pools, metrics, { metricsPublic: config.metricsPublic })];
  if (parts?.sandboxes) {
    const { minTimeoutSeconds, maxTimeoutMs } = config.sandboxes;
    routers.push(lifecycleRouter(parts.sandboxes, { minSeconds: minTimeoutSeconds, maxSeconds: Math.floor(maxTimeoutMs / 1000), maxTimeoutMs }));
    routers.push(egressRouter(sandboxDirectory(parts)));
    routers.push(portProxyRouter(parts.sandboxes));
  }
  if (workspaces) {
    routers.push(workspaceRouter(workspaces.workspaces, workspaces.files, { maxCommandBytes: config.maxCommandBytes, viewerBufferBytes: config.workspace.viewerBufferBytes }));
    routers.push(workspacePageRouter());
  }
  if (parts?.execd) {
    // Every sandbox's execd: `/sandboxes/<id>/execd/...`, a pool session's id or a lifecycle sandbox's.
    const sandboxes = sandboxDirectory(parts);
    routers.push(execdCommandRouter(parts.execd, sandboxes, limits));
    routers.push(execdCodeRouter(parts.execd, sandboxes, limits));
  }
  return routers;
}

/** `extraRouters` mount beside the broker's own (tests mount routes of their own this way). */
export function createSeam(
  pool: SessionPool,
  metrics: BrokerMetrics,
  config: BrokerConfig,
  extraRouters: Router[] = [],
  workspaces?: WorkspaceApi,
  parts?: BrokerParts,
): HttpSeam {
  return new HttpSeam([...brokerRouters(pool, metrics, config, workspaces, parts), ...extraRouters], {
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
