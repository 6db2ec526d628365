/**
 * A whole broker: backend, pool, metrics and HTTP server, with an ordered, idempotent shutdown.
 * Used by the entry point and, unchanged, by the tests (port 0).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrokerConfig } from './config/config';
import type { SessionBackend } from './core/backend';
import { SessionPool } from './core/pool';
import { DEFAULT_TIMINGS, type BashSessionTimings } from './core/bashSession';
import { BrokerMetrics } from './metrics/metrics';
import { createSeam } from './api/app';
import type { HttpSeam } from './api/seam';
import type { Router } from './api/router';
import { LocalBackend } from './backends/local/localBackend';
import { DockerBackend } from './backends/docker/dockerBackend';
import { logger } from './common/logger';
import { errorMessage } from './common/errors';
import { createWorkspaceApi, type WorkspaceApi } from './core/workspace/workspaceApi';
import { createExecdFilesApi } from './core/execd/execdFilesApi';
import { TaskService } from './core/tasks/taskService';
import { DockerTaskBackend } from './backends/docker/taskContainers';

export interface BrokerOverrides {
  backend?: SessionBackend;
  timings?: BashSessionTimings;
  healthCheckIntervalMs?: number;
  maxOutputBytes?: number;
  /** Routers mounted beside the broker's own (tests mount routes of their own). */
  routers?: Router[];
}

export function createBackend(config: BrokerConfig): SessionBackend {
  switch (config.backend) {
    case 'local':
      return new LocalBackend({ root: config.localRoot, cgroups: config.localCgroups, hostEnv: config.hostEnv });
    case 'docker':
      return new DockerBackend(config.docker);
  }
}

/** Task sandboxes run on Docker only: on the local backend their routes answer 501. */
export function createTaskService(config: BrokerConfig): TaskService {
  const backend =
    config.backend === 'docker'
      ? new DockerTaskBackend({
          tasks: config.tasks,
          deployment: config.docker.deployment,
          cpus: config.docker.cpus,
          memoryBytes: config.docker.memoryBytes,
          pidsLimit: config.docker.pidsLimit,
          startTimeoutMs: config.docker.startTimeoutMs,
        })
      : null;
  return new TaskService(backend, config.tasks);
}

export class Broker {
  readonly pool: SessionPool;
  readonly metrics = new BrokerMetrics();
  readonly server: http.Server;
  readonly seam: HttpSeam;
  readonly workspaces: WorkspaceApi;
  readonly tasks: TaskService;
  private closePromise: Promise<void> | null = null;
  private warmPromise: Promise<void> | null = null;

  constructor(
    readonly config: BrokerConfig,
    overrides: BrokerOverrides = {},
  ) {
    const backend = overrides.backend ?? createBackend(config);
    this.pool = new SessionPool(
      backend,
      {
        containers: config.containers,
        sessionsPerContainer: config.sessionsPerContainer,
        acquireTimeoutMs: config.acquireTimeoutMs,
        cleanupWorkers: config.cleanupWorkers,
        sessionIdleTimeoutMs: config.sessionIdleTimeoutMs,
        defaultCommandTimeoutMs: config.defaultCommandTimeoutMs,
        maxOutputBytes: overrides.maxOutputBytes ?? config.maxOutputBytes,
        healthCheckIntervalMs: overrides.healthCheckIntervalMs ?? config.healthCheckIntervalMs,
        startConcurrency: config.startConcurrency,
        timings: overrides.timings ?? { ...DEFAULT_TIMINGS, killGraceMs: config.timeoutKillGraceMs },
      },
      this.metrics,
    );
    this.metrics.attach(this.pool);
    this.workspaces = createWorkspaceApi(this.pool, backend, config, overrides.maxOutputBytes ?? config.maxOutputBytes);
    this.tasks = createTaskService(config);
    this.seam = createSeam(this.pool, this.metrics, config, overrides.routers, this.workspaces, createExecdFilesApi(backend, config), this.tasks);
    this.server = http.createServer({ keepAliveTimeout: 65_000 }, this.seam.serveRequest);
    this.server.on('upgrade', this.seam.serveUpgrade);
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
    this.warmPromise = this.pool.start().catch((err) => logger.error({ err: errorMessage(err) }, 'warm-up failed'));
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
    this.server.close(); // no new connections
    this.server.closeIdleConnections();
    // WebSockets first: whatever a socket's route holds (a lease) is let go while the pool can take it.
    await this.seam.close();
    await this.warmPromise?.catch(() => undefined);
    // Workspaces next: their terminals are closed and their slots go back while the pool still takes them.
    await this.workspaces.workspaces.close();
    // Task sandboxes end with sandbox_terminated on their streams, and their containers go.
    await this.tasks.close();
    await this.pool.close(graceMs);
    // Give in-flight responses a moment to flush, then cut what is left.
    await new Promise((r) => setTimeout(r, 50));
    this.server.closeAllConnections();
  }
}
