/**
 * The broker's HTTP surface: which routers are mounted, over the one seam (seam.ts). A new API is a
 * router file in this folder, a field in `BrokerApis` and one line in `brokerRouters`.
 */
import type { RequestListener } from 'node:http';
import type { SessionPool } from '../core/pool/pool';
import type { BrokerMetrics } from '../metrics/metrics';
import type { BrokerConfig } from '../config/config';
import { createAuthorize } from '../http/auth';
import { poolErrorFormat } from '../http/errorFormats';
import { HttpSeam } from '../http/seam';
import type { Router } from '../http/router';
import { poolRouter } from './pool/poolRoutes';
import { rolloutRouter } from './pool/rolloutRoutes';
import { RequestIds } from '../core/pool/requestIds';
import { healthRouter } from './pool/healthRoutes';
import { workspaceRouter } from './workspace/workspaceRoutes';
import { workspacePageRouter } from './workspace/workspacePage';
import type { WorkspaceApi } from '../core/workspace/workspaceApi';
import type { ExecdFilesApi } from '../core/execd/execdFilesApi';
import type { ExecdService } from '../core/execd/execdService';
import type { TaskService } from '../core/tasks/taskService';
import { taskRouter } from './tasks/taskRoutes';
import type { SandboxDirectory } from '../core/sandbox/sandboxDirectory';
import { execdFileRouter } from './execd/execdFileRoutes';
import { execdMetricsRouter } from './execd/execdMetricsRoutes';
import { execdCommandRouter } from './execd/execdCommandRoutes';
import { execdCodeRouter } from './execd/execdCodeRoutes';
import type { GroupService } from '../core/groups/groupService';
import { groupRouter } from './groups/groupRoutes';
import type { DashboardFeed } from '../core/dashboard/dashboardFeed';
import { dashboardRouter } from './dashboard/dashboardRoutes';
import { docsRouter } from './docs/docsRoutes';
import { DEFAULT_POOL, PoolRegistry } from '../core/pool/poolRegistry';
import type { SandboxService } from '../core/lifecycle/sandboxService';
import { lifecycleRouter } from './lifecycle/lifecycleRoutes';
import { egressRouter } from './lifecycle/unservedRoutes';
import { portProxyRouter } from './lifecycle/portProxy';
import type { BrokerImages } from '../brokerImages';
import { imageCheckRouter, imageRouter } from './images/imageRoutes';
import { snapshotRouter } from './snapshots/snapshotRoutes';
import type { SnapshotService } from '../core/snapshots/snapshotService';

/** The execd API's two halves: processes (commands, sessions, code) and files with metrics. */
export interface ExecdApis {
  service: ExecdService;
  files: ExecdFilesApi;
}

/**
 * The APIs beyond the pool's, each mounted when given (the bench's app floor has none):
 * `workspaces` (shared PTY workspaces), `execd` of every sandbox (OpenSandbox's execd API), `groups`:
 * sandbox groups, `pools`: every pool (BROKER_POOLS; without it, the default pool alone), `sandboxes`:
 * OpenSandbox's lifecycle API (/v1), `tasks`: task sandboxes with a coding agent,
 * `dashboard`: the live dashboard's feed (/ui, /admin), `directory`: every live sandbox by id, which
 * the per-sandbox routes (execd's, the lifecycle's egress) resolve their path's id through.
 */
export interface BrokerApis {
  workspaces?: WorkspaceApi;
  execd?: ExecdApis;
  groups?: GroupService;
  pools?: PoolRegistry;
  sandboxes?: SandboxService;
  tasks?: TaskService;
  dashboard?: DashboardFeed;
  images?: BrokerImages;
  /** Snapshots of sessions (docs/snapshots.md): acquires from a snapshot, forks, restores. */
  snapshots?: SnapshotService;
  directory?: SandboxDirectory;
}

/** The directory the per-sandbox routes need (execd's, the lifecycle's): a broker that mounts them gives one. */
function directoryOf(apis: BrokerApis): SandboxDirectory {
  if (!apis.directory) throw new Error('execd and the lifecycle API need the broker\'s directory of sandboxes (BrokerApis.directory)');
  return apis.directory;
}

export function brokerRouters(pool: SessionPool, metrics: BrokerMetrics, config: BrokerConfig, apis: BrokerApis = {}): Router[] {
  const limits = {
    defaultTimeoutSeconds: config.defaultCommandTimeoutMs / 1000,
    maxTimeoutSeconds: config.maxCommandTimeoutMs / 1000,
    maxCommandBytes: config.maxCommandBytes,
  };
  const requestIds = new RequestIds({ windowMs: config.rollout.requestIdWindowMs, maxEntries: config.rollout.requestIdMax });
  const pools = apis.pools ?? new PoolRegistry({ name: DEFAULT_POOL, image: config.docker.image, pool, sessionsPerContainer: config.sessionsPerContainer, freshContainer: false });
  const routers = [
    poolRouter(pools, limits, requestIds, config.rollout.executeFacts, apis.images?.pools ?? null, apis.snapshots ?? null),
    rolloutRouter(pools, limits, requestIds, apis.images?.pools ?? null, apis.snapshots ?? null),
    healthRouter(pools, metrics, { metricsPublic: config.metricsPublic, images: apis.images?.report }),
  ];
  const { workspaces, execd, groups, sandboxes: lifecycle, tasks, dashboard, images } = apis;
  if (images) routers.push(imageRouter(images.warmups, images.report));
  if (images && config.cluster.role === 'node') routers.push(imageCheckRouter(images.warmups));
  if (apis.snapshots) routers.push(snapshotRouter(apis.snapshots));
  if (workspaces) {
    const { viewerBufferBytes, terminalBufferBytes, viewerStallMs, pingMs } = config.workspace;
    const socketOptions = { viewerBufferBytes, terminalBufferBytes, viewerStallMs, pingMs, counts: metrics.workspaceViewers };
    routers.push(workspaceRouter(workspaces.workspaces, workspaces.files, { maxCommandBytes: config.maxCommandBytes, ...socketOptions }));
    routers.push(workspacePageRouter());
  }
  if (lifecycle) {
    const { minTimeoutSeconds, maxTimeoutMs } = config.sandboxes;
    routers.push(lifecycleRouter(lifecycle, { minSeconds: minTimeoutSeconds, maxSeconds: Math.floor(maxTimeoutMs / 1000), maxTimeoutMs }, apis.snapshots ?? null));
    routers.push(egressRouter(directoryOf(apis)));
    routers.push(portProxyRouter(lifecycle));
  }
  if (execd) {
    // Every sandbox's execd: `/sandboxes/<id>/execd/...`, the id of any live sandbox that has a shell.
    const sandboxes = directoryOf(apis);
    routers.push(execdCommandRouter(execd.service, sandboxes, limits));
    routers.push(execdCodeRouter(execd.service, sandboxes, limits));
    routers.push(execdFileRouter(sandboxes, execd.files.files));
    routers.push(execdMetricsRouter(sandboxes, execd.files.metrics));
  }
  if (groups) routers.push(groupRouter(groups, config.cluster.role === 'node' ? 'broker' : 'port'));
  if (tasks) routers.push(taskRouter(tasks, { keepAliveMs: config.tasks.keepAliveMs }));
  if (dashboard) routers.push(dashboardRouter(pools, dashboard));
  return routers;
}

/** `extraRouters` mount beside the broker's own (tests mount routes of their own this way). */
export function createSeam(pool: SessionPool, metrics: BrokerMetrics, config: BrokerConfig, extraRouters: Router[] = [], apis: BrokerApis = {}): HttpSeam {
  // /openapi.json describes the routes the seam registered: it reads them once the seam exists.
  let seam: HttpSeam | null = null;
  const docs = docsRouter(() => seam?.routeList() ?? []);
  seam = new HttpSeam([...brokerRouters(pool, metrics, config, apis), docs, ...extraRouters], {
    authorize: createAuthorize(config.token),
    maxBodyBytes: config.maxBodyBytes,
    // Requests no router's prefix claims get the pool API's format, as they always have.
    defaultErrors: poolErrorFormat,
  });
  return seam;
}

/** The request listener alone (the bench measures it over a stub pool). */
export function createApp(pool: SessionPool, metrics: BrokerMetrics, config: BrokerConfig): RequestListener {
  return createSeam(pool, metrics, config).serveRequest;
}
