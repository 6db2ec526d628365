/**
 * A whole broker: backend, pool, metrics and HTTP server, with an ordered, idempotent shutdown.
 * Used by the entry point and, unchanged, by the tests (port 0).
 */
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { BrokerConfig } from './config/config';
import type { PoolSpec } from './config/pools';
import { DEFAULT_POOL, PoolRegistry, type PoolEntry } from './core/pool/poolRegistry';
import { SandboxService } from './core/lifecycle/sandboxService';
import { registerSandboxGauge } from './metrics/lifecycleMetrics';
import type { SessionBackend } from './core/ports/backend';
import { SessionPool } from './core/pool/pool';
import { DEFAULT_TIMINGS, type BashSessionTimings } from './core/session/bashSession';
import { BrokerMetrics } from './metrics/metrics';
import { SnapshotService } from './core/snapshots/snapshotService';
import { createSeam } from './api/app';
import type { HttpSeam } from './http/seam';
import type { Router } from './http/router';
import { LocalBackend } from './backends/local/localBackend';
import { DockerBackend } from './backends/docker/dockerBackend';
import { logger } from './common/logger';
import { errorMessage } from './common/errors';
import { createWorkspaceApi, type WorkspaceApi } from './core/workspace/workspaceApi';
import { createExecdFilesApi } from './core/execd/execdFilesApi';
import { TrajectoryFile } from './trajectories/trajectoryFile';
import { ExecdService } from './core/execd/execdService';
import { PoolActivity } from './core/dashboard/poolActivity';
import { teeObservers } from './core/dashboard/observerTee';
import { DashboardFeed } from './core/dashboard/dashboardFeed';
import { sandboxLines } from './core/dashboard/sandboxLines';
import { TaskService } from './core/tasks/taskService';
import { SandboxDirectory } from './core/sandbox/sandboxDirectory';

/** execd shells (running commands, bash sessions, code contexts) one sandbox may have at once. */
const EXECD_MAX_SHELLS_PER_SANDBOX = 16;
/** Finished commands a sandbox's execd remembers for /command/status and /logs. */
const EXECD_FINISHED_COMMANDS_KEPT = 64;
import { createGroupService } from './core/groups/groupsApi';
import type { GroupService } from './core/groups/groupService';
import { openLanceStore } from './backends/lancedb/lanceVectorStore';
import { HttpGroupEndpoints } from './api/groups/groupListeners';
import type { ListenerGuard } from './http/listenerGuard';
import { createBrokerImages, type BrokerImages } from './brokerImages';

export interface BrokerOverrides {
  backend?: SessionBackend;
  timings?: BashSessionTimings;
  healthCheckIntervalMs?: number;
  maxOutputBytes?: number;
  /** Routers mounted beside the broker's own (tests mount routes of their own). */
  routers?: Router[];
  /** Wraps the server's listeners: a node of a cluster admits only its gateways' calls (cluster/node/clusterGuard.ts). */
  guard?: ListenerGuard;
  /** Serves HTTPS with these options: a node of a cluster over mutual TLS (cluster/clusterTls.ts). */
  tls?: https.ServerOptions;
}

export function createBackend(config: BrokerConfig): SessionBackend {
  switch (config.backend) {
    case 'local':
      return new LocalBackend({ root: config.localRoot, cgroups: config.localCgroups, hostEnv: config.hostEnv, ...localIsolation(config) });
    case 'docker':
      // The broker's own backend also starts sandbox groups' and task sandboxes' containers.
      return new DockerBackend({ ...config.docker, groupImage: config.groups.image, tasks: config.tasks });
  }
}

/** The local backend isolates leases only when BROKER_SESSION_ISOLATION asks for it explicitly (its default is the docker backend's). */
function localIsolation(config: BrokerConfig): { isolation: boolean; isolationDiskBytes: number } {
  return { isolation: config.docker.isolation.enabled && config.docker.isolation.asked, isolationDiskBytes: config.docker.isolation.diskBytes };
}

/**
 * A named pool's backend (BROKER_POOLS): its image and environment, and a deployment name of its
 * own (a backend sweeps its deployment's containers that it did not start: pools must not share one).
 */
export function createPoolBackend(config: BrokerConfig, spec: PoolSpec): SessionBackend {
  switch (config.backend) {
    case 'local':
      return new LocalBackend({ root: path.join(config.localRoot, `pool-${spec.name}`), cgroups: config.localCgroups, hostEnv: config.hostEnv, env: spec.env, ...localIsolation(config) });
    case 'docker': {
      // A pool of whole containers, fresh for each lease (the lifecycle's), shares its container's
      // network unless it names one: the container is its session's alone (no neighbour to keep
      // apart), and the lifecycle's port proxy reaches the session's servers at the container's address.
      const wholeContainers = spec.freshContainer && spec.sessionsPerContainer === 1;
      const network = spec.network ?? (wholeContainers ? 'shared' : undefined);
      const isolation = network ? { ...config.docker.isolation, network } : config.docker.isolation;
      // A session's CPU quota cannot exceed its container's (the kernel refuses a child's above its parent's).
      const sessionLimits = { ...config.docker.sessionLimits, ...spec.sessionLimits };
      sessionLimits.cpus = Math.min(sessionLimits.cpus, config.docker.cpus);
      return new DockerBackend({ ...config.docker, image: spec.image, env: spec.env, deployment: `${config.docker.deployment}.${spec.name}`, isolation, sessionLimits, wholeContainers });
    }
  }
}


export class Broker {
  /** The default pool (the pool API's own). */
  readonly pool: SessionPool;
  /** Every pool: the default one and BROKER_POOLS' named ones. */
  readonly pools: PoolRegistry;
  /** Snapshots of sessions (docs/snapshots.md). */
  readonly snapshots: SnapshotService;
  readonly backend: SessionBackend;
  /** The lifecycle API's sandboxes (/v1/sandboxes). */
  readonly sandboxes: SandboxService;
  /** Every live sandbox by id, of every kind (core/sandbox/sandbox.ts): execd and the dashboard find them here. */
  readonly directory = new SandboxDirectory();
  readonly metrics = new BrokerMetrics();
  readonly server: http.Server;
  readonly seam: HttpSeam;
  readonly workspaces: WorkspaceApi;
  /** Where ended leases' journals go (BROKER_TRAJECTORY_DIR), or null. */
  readonly trajectories: TrajectoryFile | null;
  readonly execd: ExecdService;
  readonly groups: GroupService;
  readonly tasks: TaskService;
  /** Images on demand (docs/images.md): acquires by image, pulls, image pools, warm-ups. */
  readonly images: BrokerImages;
  /** What the dashboard shows (/ui): the pool's recent work, and its live feed. */
  readonly activity = new PoolActivity();
  readonly dashboard: DashboardFeed;
  private closePromise: Promise<void> | null = null;
  private warmPromise: Promise<void> | null = null;

  constructor(
    readonly config: BrokerConfig,
    overrides: BrokerOverrides = {},
  ) {
    const backend = overrides.backend ?? createBackend(config);
    const { trajectoryDir, trajectoryFileBytes, trajectoryFiles } = config.rollout;
    this.trajectories = trajectoryDir ? new TrajectoryFile(trajectoryDir, trajectoryFileBytes, trajectoryFiles) : null;
    const timings = overrides.timings ?? { ...DEFAULT_TIMINGS, killGraceMs: config.timeoutKillGraceMs };
    this.backend = backend;
    const poolOptions = {
      acquireTimeoutMs: config.acquireTimeoutMs,
      cleanupWorkers: config.cleanupWorkers,
      sessionIdleTimeoutMs: config.sessionIdleTimeoutMs,
      defaultCommandTimeoutMs: config.defaultCommandTimeoutMs,
      maxOutputBytes: overrides.maxOutputBytes ?? config.maxOutputBytes,
      healthCheckIntervalMs: overrides.healthCheckIntervalMs ?? config.healthCheckIntervalMs,
      startConcurrency: config.startConcurrency,
      timings,
      maxLeaseTtlMs: config.rollout.maxLeaseTtlMs,
      journal: { entries: config.rollout.historyEntries, outputChars: config.rollout.historyOutputChars },
      onLeaseEnded: this.trajectories ? (record: Parameters<TrajectoryFile['append']>[0]) => this.trajectories!.append(record) : undefined,
      sandboxes: this.directory,
    };
    // Every pool reports to the metrics and to the dashboard's activity alike.
    const observer = teeObservers(this.metrics, this.activity);
    this.pool = new SessionPool(backend, { ...poolOptions, containers: config.containers, sessionsPerContainer: config.sessionsPerContainer }, observer);
    const main: PoolEntry = { name: DEFAULT_POOL, image: config.docker.image, pool: this.pool, backend, sessionsPerContainer: config.sessionsPerContainer, freshContainer: false };
    const named = config.pools.map((spec): PoolEntry => {
      const poolBackend = createPoolBackend(config, spec);
      const pool = new SessionPool(
        poolBackend,
        {
          ...poolOptions,
          containers: spec.containers,
          sessionsPerContainer: spec.sessionsPerContainer,
          cleanupWorkers: Math.min(config.cleanupWorkers, spec.containers * spec.sessionsPerContainer),
          preparation: { files: spec.files, startupCommands: spec.startupCommands },
          freshContainer: spec.freshContainer,
        },
        observer,
      );
      return { name: spec.name, image: spec.image, pool, backend: poolBackend, sessionsPerContainer: spec.sessionsPerContainer, freshContainer: spec.freshContainer };
    });
    this.pools = new PoolRegistry(main, named);
    this.images = createBrokerImages(config, backend, this.pools, poolOptions, observer, this.metrics.images);
    // Only where images are pulled: elsewhere an unknown id costs no look at image pools.
    if (this.images.pools.onDemand) this.pools.attachOnDemand((sessionId) => this.images.pools.owning(sessionId));
    this.metrics.attach(this.pool);
    this.metrics.attachPools(this.pools);
    this.workspaces = createWorkspaceApi(this.pool, backend, config, overrides.maxOutputBytes ?? config.maxOutputBytes, this.directory);
    this.snapshots = new SnapshotService(this.pools, config.snapshots);
    this.sandboxes = new SandboxService({
      pools: this.pools,
      backend,
      maxDedicated: config.sandboxes.maxDedicated,
      containersIsolate: config.backend === 'docker',
      healthCheckIntervalMs: config.healthCheckIntervalMs,
      images: { pools: this.images.pools, access: this.images.access },
      directory: this.directory,
      snapshots: this.snapshots,
    });
    // An id no live sandbox has: the lifecycle knows its ended ones; the pools, the rest (404 never issued).
    this.directory.explainMisses((id) => this.sandboxes.explain(id));
    this.directory.explainMisses((id) => this.pools.explain(id));
    registerSandboxGauge(this.metrics.registry, this.sandboxes);
    this.execd = new ExecdService({
      maxShellsPerSandbox: EXECD_MAX_SHELLS_PER_SANDBOX,
      maxOutputBytes: overrides.maxOutputBytes ?? config.maxOutputBytes,
      maxFinishedCommands: EXECD_FINISHED_COMMANDS_KEPT,
      timings,
    });
    // A node's sandbox ports, like its own, take the cluster's token only (its clients go through gateways).
    const sandboxToken = config.cluster.role === 'node' ? config.cluster.clusterToken : config.token;
    const endpoints = new HttpGroupEndpoints({ host: config.host, token: sandboxToken, maxBodyBytes: config.maxBodyBytes });
    this.groups = createGroupService(config, backend.containers.kinds.has('group') ? backend : null, openLanceStore, endpoints, overrides.maxOutputBytes ?? config.maxOutputBytes, this.directory);
    this.dashboard = new DashboardFeed({
      pools: () => this.pools.entries,
      activity: this.activity,
      workspaces: () => this.workspaces.workspaces.list().map((ws) => ({ workspace_id: ws.id, workdir: ws.workdir, running_job_id: ws.runningJobId })),
      // The group first (it holds sandboxes, and is none), then every live sandbox, of every kind.
      sandboxes: () => [...this.groups.list(), ...sandboxLines(this.directory, (id) => this.execd.summaryOf(id))],
      images: () => this.images.report().images,
    });
    // Task sandboxes where the backend starts their containers (Docker); elsewhere their routes answer 501.
    this.tasks = new TaskService(backend.containers.kinds.has('task') ? backend : null, config.tasks, undefined, this.directory);
    this.seam = createSeam(this.pool, this.metrics, config, overrides.routers, {
      tasks: this.tasks,
      workspaces: this.workspaces,
      execd: { service: this.execd, files: createExecdFilesApi(config) },
      groups: this.groups,
      pools: this.pools,
      sandboxes: this.sandboxes,
      dashboard: this.dashboard,
      images: this.images,
      snapshots: this.snapshots,
      directory: this.directory,
    });
    const guard = overrides.guard;
    const listener = guard ? guard.request(this.seam.serveRequest) : this.seam.serveRequest;
    this.server = overrides.tls ? https.createServer({ ...overrides.tls, keepAliveTimeout: 65_000 }, listener) : http.createServer({ keepAliveTimeout: 65_000 }, listener);
    this.server.on('upgrade', guard ? guard.upgrade(this.seam.serveUpgrade) : this.seam.serveUpgrade);
    this.server.on('clientError', this.seam.serveClientError);
  }

  /** Listens first, then warms: acquires wait in the queue until the first sessions are ready. */
  async start(): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      // A deep accept queue: a thousand rollout clients connecting at once must not overflow the
      // default 511 and pay one-second SYN retries.
      this.server.listen({ port: this.config.port, host: this.config.host, backlog: 4096 }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    void this.tasks.sweepStale();
    void this.groups.sweepStale();
    this.warmPromise = Promise.all([this.pools.start(), this.images.start()])
      .then(() => undefined)
      .catch((err) => logger.error({ err: errorMessage(err) }, 'warm-up failed'));
    this.dashboard.start();
    return this.server.address() as AddressInfo;
  }

  /** Resolves once every slot has been tried once (tests wait for a warm pool). */
  async warm(): Promise<void> {
    await this.warmPromise;
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    const graceMs = this.config.shutdownGraceMs;
    this.dashboard.stop();
    this.server.close(); // no new connections
    this.server.closeIdleConnections();
    // WebSockets first: whatever a socket's route holds (a lease) is let go while the pool can take it.
    await this.seam.close();
    await this.warmPromise?.catch(() => undefined);
    // Workspaces next: their terminals are closed and their slots go back while the pool still takes them.
    await this.workspaces.workspaces.close();
    // Task sandboxes end with sandbox_terminated on their streams, and their containers go.
    await this.tasks.close();
    // Lifecycle sandboxes next, for the same reason: a warm sandbox's lease goes back, a dedicated container is removed.
    await this.sandboxes.close();
    // The sandbox group next: its containers, disks, listeners and database go before the engine's client does.
    await this.groups.close().catch((err: unknown) => logger.error({ err: errorMessage(err) }, 'stopping the sandbox group failed'));
    // execd's shells die before the pools': they live in the pools' containers.
    await this.execd.close();
    // Image pools before the configured ones: the default pool's backend owns what theirs share.
    await this.images.pools.close(graceMs);
    this.snapshots.close();
    await this.pools.close(graceMs);
    await this.trajectories?.flush();
    // Give in-flight responses a moment to flush, then cut what is left.
    await new Promise((r) => setTimeout(r, 50));
    this.server.closeAllConnections();
  }
}
