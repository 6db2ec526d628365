/**
 * Configuration, resolved once at start from an injectable environment into a typed object.
 * An invalid value stops the start with a message that names the variable.
 */
import { loadSnapshotConfig, type SnapshotConfig } from './snapshotConfig';
import os from 'node:os';
import path from 'node:path';
import { LOG_LEVELS, type LogLevel } from '../common/logger';
import { parsePools, PoolConfigError, type PoolSpec } from './pools';
import { bytes, ConfigError, flag, int, portRange, seconds, type Env } from './envValues';
import { loadTaskConfig, type TaskConfig } from './taskConfig';
import { loadWorkspaceConfig, type WorkspaceConfig } from './workspaceConfig';
import { deploymentName, loadDockerConfig, type DockerConfig } from './dockerConfig';
import { loadClusterConfig, type ClusterConfig } from './clusterConfig';
import { loadImageConfig, type ImageConfig } from './imageConfig';

export { ConfigError };

export type BackendKind = 'local' | 'docker';


/** What a local session inherits of the broker's own environment (nothing else of it: tokens stay out). */
export interface HostEnv {
  /** The sessions' PATH, and where the broker looks for bash. */
  path: string;
  lang: string;
  /** null: unset, the sessions get none. */
  tz: string | null;
}

export interface BrokerConfig {
  backend: BackendKind;
  host: string;
  port: number;
  containers: number;
  sessionsPerContainer: number;
  acquireTimeoutMs: number;
  cleanupWorkers: number;
  sessionIdleTimeoutMs: number;
  defaultCommandTimeoutMs: number;
  maxCommandTimeoutMs: number;
  maxBodyBytes: number;
  maxCommandBytes: number;
  shutdownGraceMs: number;
  /** After a command's timeout: how long its shell may take to come back before it is declared BROKEN. */
  timeoutKillGraceMs: number;
  /** Per stream and per execute; beyond it the head and tail are kept (BROKER_MAX_OUTPUT_BYTES). */
  maxOutputBytes: number;
  healthCheckIntervalMs: number;
  /** How many containers start at once during warm-up and replacement (BROKER_START_CONCURRENCY). */
  startConcurrency: number;
  /** BROKER_LOG_LEVEL: pino's level; `warn` by default under NODE_ENV=test (jest), else `info`. */
  logLevel: LogLevel;
  /** BROKER_TOKEN: when set, every route but GET /health needs it. */
  token: string | null;
  metricsPublic: boolean;
  /** Local backend: where each "container" gets its working root (HOME of its sessions). */
  localRoot: string;
  /** Local backend: confine each session in its own cgroup v2 when the host allows it. */
  localCgroups: 'auto' | 'off';
  /** Local backend: PATH, LANG and TZ as the broker got them. */
  hostEnv: HostEnv;
  /** BROKER_POOLS: named warm pools beside the default one (pools.ts). */
  pools: PoolSpec[];
  /** The lifecycle API (/v1/sandboxes). */
  sandboxes: {
    /** BROKER_SANDBOX_MAX_TIMEOUT: the largest `timeout` a create may ask, and how far a renewal may reach. */
    maxTimeoutMs: number;
    /**
     * BROKER_SANDBOX_MIN_TIMEOUT: the smallest `timeout` a create may ask (OpenSandbox's 60 s by
     * default; tests of expiry lower it).
     */
    minTimeoutSeconds: number;
    /** BROKER_SANDBOX_MAX_DEDICATED: dedicated containers (images no pool serves) running at once. */
    maxDedicated: number;
  };
  rollout: {
    /** BROKER_EXECUTE_FACTS: execute answers carry the termination facts unless the request says `"facts": false`. */
    executeFacts: boolean;
    /** BROKER_REQUEST_ID_WINDOW: how long a succeeded call's request_id is remembered after it ended. */
    requestIdWindowMs: number;
    /** BROKER_REQUEST_ID_MAX: succeeded calls remembered at most (each holds its answer), the oldest forgotten first. */
    requestIdMax: number;
    /** BROKER_MAX_LEASE_TTL: the longest lease_ttl an acquire gets (longer ones are capped); default the idle timeout. */
    maxLeaseTtlMs: number;
    /** BROKER_HISTORY_ENTRIES: executes each lease's journal keeps (GET /session/{id}/history). */
    historyEntries: number;
    /** BROKER_HISTORY_OUTPUT_CHARS: characters kept of each stream's head and of its tail per journal entry. */
    historyOutputChars: number;
    /** BROKER_TRAJECTORY_DIR: where each ended lease's journal is appended as a JSON line; null: not kept. */
    trajectoryDir: string | null;
    /** BROKER_TRAJECTORY_FILE_BYTES: a trajectory file is rotated at this size. */
    trajectoryFileBytes: number;
    /** BROKER_TRAJECTORY_FILES: rotated files kept besides the current one (the oldest removed). */
    trajectoryFiles: number;
  };
  /** Shared PTY workspaces (the workspace API): workspaceConfig.ts. */
  workspace: WorkspaceConfig;
  execdFiles: {
    /** BROKER_EXECD_MAX_UPLOAD_BYTES: the largest file one execd upload writes (413 beyond). */
    maxUploadBytes: number;
    /** BROKER_EXECD_MAX_REPLACE_BYTES: the largest file /files/replace rewrites (it is held in memory). */
    maxReplaceBytes: number;
    /** BROKER_EXECD_MAX_LIST_ENTRIES: the most entries a directory listing or a search walks. */
    maxListEntries: number;
  };
  /** Sandbox groups (docker backend only). */
  groups: {
    /** BROKER_SANDBOX_PORTS: the ports sandboxes' APIs listen on, one each, lowest free first. */
    sandboxPorts: { first: number; last: number };
    /** BROKER_ACTION_WAIT: how long an action runs before its observation says `terminal_still_running`. */
    actionWaitMs: number;
    /** BROKER_TOOL_TIMEOUT: a tool still running after this is killed. */
    toolTimeoutMs: number;
    /** BROKER_GROUP_DIR: the groups' files on the host (databases, sandbox disks, sockets). */
    hostRoot: string;
    /** BROKER_SANDBOX_IMAGE: the sandboxes' image (needs bash, python3 and coreutils). */
    image: string;
    /** BROKER_SANDBOX_DISK: a sandbox's disk when its request names none. */
    defaultDiskBytes: number;
  };
  /** Task sandboxes: taskConfig.ts. */
  tasks: TaskConfig;
  /** The Docker backend's containers: dockerConfig.ts. */
  docker: DockerConfig;
  /** The role in a cluster (standalone by default) and its store: clusterConfig.ts. */
  cluster: ClusterConfig;
  /** Images on demand (docs/images.md): imageConfig.ts. */
  images: ImageConfig;
  /** Snapshots of sessions (docs/snapshots.md): snapshotConfig.ts. */
  snapshots: SnapshotConfig;
}

export function loadConfig(env: Env = process.env): BrokerConfig {
  const backendRaw = (env.BROKER_BACKEND ?? 'local').trim() || 'local';
  if (backendRaw !== 'local' && backendRaw !== 'docker') {
    throw new ConfigError(`BROKER_BACKEND must be 'local' or 'docker', got '${backendRaw}'`);
  }
  const host = (env.HOST ?? '127.0.0.1').trim() || '127.0.0.1';
  const cgroups = (env.BROKER_LOCAL_CGROUPS ?? 'auto').trim();
  if (cgroups !== 'auto' && cgroups !== 'off') {
    throw new ConfigError(`BROKER_LOCAL_CGROUPS must be 'auto' or 'off', got '${cgroups}'`);
  }
  const docker = loadDockerConfig(env);
  const token = (env.BROKER_TOKEN ?? '').trim() || null;
  const requestIdWindowMs = seconds(env, 'BROKER_REQUEST_ID_WINDOW', 600);
  const cluster = loadClusterConfig(env, requestIdWindowMs);
  // A node of a cluster answers only calls that carry the cluster token (clusterConfig.ts requires one).
  if (!token && !isLoopback(host) && !flag(env, 'BROKER_ALLOW_INSECURE') && cluster.role !== 'node') {
    throw new ConfigError(
      `HOST=${host} is not a loopback address and BROKER_TOKEN is not set: anyone who reaches the port could run ` +
        'commands. Set BROKER_TOKEN, or BROKER_ALLOW_INSECURE=1 if the network is trusted',
    );
  }
  const maxCommandTimeoutMs = seconds(env, 'BROKER_MAX_COMMAND_TIMEOUT', 86400);
  if (maxCommandTimeoutMs > 2_000_000_000) {
    throw new ConfigError('BROKER_MAX_COMMAND_TIMEOUT must be at most 2000000 seconds (a Node timer limit)');
  }
  const containers = int(env, 'BROKER_CONTAINERS', 4, { max: 4096 });
  const sessionIdleTimeoutMs = seconds(env, 'BROKER_SESSION_IDLE_TIMEOUT', 1800);
  const trajectoryDir = (env.BROKER_TRAJECTORY_DIR ?? '').trim() || null;
  if (trajectoryDir !== null && !path.isAbsolute(trajectoryDir)) throw new ConfigError(`BROKER_TRAJECTORY_DIR must be an absolute path, got '${trajectoryDir}'`);
  const sessionsPerContainer = int(env, 'BROKER_SESSIONS_PER_CONTAINER', 8, { max: 1024, alias: 'SWEREX_SESSIONS_PER_CONTAINER' });
  const maxCommandBytes = int(env, 'BROKER_MAX_COMMAND_BYTES', 1024 * 1024, { min: 16 });
  let pools: PoolSpec[];
  try {
    pools = parsePools(env.BROKER_POOLS, docker.image, maxCommandBytes);
  } catch (err) {
    if (err instanceof PoolConfigError) throw new ConfigError(err.message);
    throw err;
  }
  const maxSandboxTimeoutMs = seconds(env, 'BROKER_SANDBOX_MAX_TIMEOUT', 86400);
  if (maxSandboxTimeoutMs > 2_000_000_000) throw new ConfigError('BROKER_SANDBOX_MAX_TIMEOUT must be at most 2000000 seconds (a Node timer limit)');
  return {
    backend: backendRaw,
    host,
    port: int(env, 'PORT', 8180, { min: 0, max: 65535 }),
    containers,
    sessionsPerContainer,
    acquireTimeoutMs: seconds(env, 'BROKER_ACQUIRE_TIMEOUT', 120, 'SWEREX_ACQUIRE_TIMEOUT'),
    // By default every slot's rebuild can run at once: a cap below the pool's size left released
    // slots CLEANING behind a queue at 256 sessions while the CPU had room.
    cleanupWorkers: int(env, 'BROKER_CLEANUP_WORKERS', containers * sessionsPerContainer, { max: 4096, alias: 'SWEREX_CLEANUP_WORKERS' }),
    sessionIdleTimeoutMs,
    defaultCommandTimeoutMs: 30_000,
    maxCommandTimeoutMs,
    maxBodyBytes: int(env, 'BROKER_MAX_BODY_BYTES', 64 * 1024 * 1024, { min: 1024 }),
    maxCommandBytes,
    shutdownGraceMs: seconds(env, 'BROKER_SHUTDOWN_GRACE', 10),
    timeoutKillGraceMs: seconds(env, 'BROKER_TIMEOUT_KILL_GRACE', 10),
    maxOutputBytes: int(env, 'BROKER_MAX_OUTPUT_BYTES', 16 * 1024 * 1024, { min: 1024 }),
    healthCheckIntervalMs: seconds(env, 'BROKER_HEALTH_INTERVAL', 5),
    startConcurrency: int(env, 'BROKER_START_CONCURRENCY', 8, { max: 1024 }),
    logLevel: logLevel(env),
    token,
    metricsPublic: flag(env, 'BROKER_METRICS_PUBLIC'),
    localRoot: (env.BROKER_LOCAL_ROOT ?? '').trim() || path.join(os.tmpdir(), `bash-broker-${process.pid}`),
    localCgroups: cgroups,
    hostEnv: hostEnv(env),
    pools,
    sandboxes: {
      minTimeoutSeconds: int(env, 'BROKER_SANDBOX_MIN_TIMEOUT', 60, { max: Math.floor(maxSandboxTimeoutMs / 1000) }),
      maxTimeoutMs: maxSandboxTimeoutMs, maxDedicated: int(env, 'BROKER_SANDBOX_MAX_DEDICATED', 32, { min: 0, max: 4096 }) },
    rollout: {
      executeFacts: flag(env, 'BROKER_EXECUTE_FACTS'),
      requestIdWindowMs,
      requestIdMax: int(env, 'BROKER_REQUEST_ID_MAX', 50_000, { max: 10_000_000 }),
      maxLeaseTtlMs: seconds(env, 'BROKER_MAX_LEASE_TTL', sessionIdleTimeoutMs / 1000),
      historyEntries: int(env, 'BROKER_HISTORY_ENTRIES', 256, { max: 100_000 }),
      historyOutputChars: int(env, 'BROKER_HISTORY_OUTPUT_CHARS', 1024, { min: 0, max: 1024 * 1024 }),
      trajectoryDir,
      trajectoryFileBytes: bytes(env, 'BROKER_TRAJECTORY_FILE_BYTES', 64 * 1024 ** 2, { minBytes: 64 * 1024 }),
      trajectoryFiles: int(env, 'BROKER_TRAJECTORY_FILES', 4, { min: 0, max: 1000 }),
    },
    workspace: loadWorkspaceConfig(env),
    execdFiles: {
      maxUploadBytes: bytes(env, 'BROKER_EXECD_MAX_UPLOAD_BYTES', 1024 ** 3, { minBytes: 1 }),
      maxReplaceBytes: bytes(env, 'BROKER_EXECD_MAX_REPLACE_BYTES', 16 * 1024 ** 2, { minBytes: 1 }),
      maxListEntries: int(env, 'BROKER_EXECD_MAX_LIST_ENTRIES', 100_000, { min: 1, max: 10_000_000 }),
    },
    groups: {
      sandboxPorts: portRange(env, 'BROKER_SANDBOX_PORTS', { first: 8001, last: 8099 }),
      actionWaitMs: seconds(env, 'BROKER_ACTION_WAIT', 10),
      toolTimeoutMs: seconds(env, 'BROKER_TOOL_TIMEOUT', 300),
      hostRoot: groupDir(env),
      image: (env.BROKER_SANDBOX_IMAGE ?? '').trim() || 'bash-broker-sandbox:latest',
      defaultDiskBytes: bytes(env, 'BROKER_SANDBOX_DISK', 1024 ** 3),
    },
    tasks: loadTaskConfig(env),
    docker,
    cluster,
    images: loadImageConfig(env, configuredSize(containers, sessionsPerContainer, pools)),
    snapshots: loadSnapshotConfig(env),
  };
}

/** The configured pools' share of the node's budget (BROKER_NODE_MAX_*): the default pool and BROKER_POOLS'. */
function configuredSize(containers: number, sessionsPerContainer: number, pools: readonly PoolSpec[]): { containers: number; sessions: number; sessionsPerContainer: number } {
  return {
    containers: containers + pools.reduce((n, p) => n + p.containers, 0),
    sessions: containers * sessionsPerContainer + pools.reduce((n, p) => n + p.containers * p.sessionsPerContainer, 0),
    sessionsPerContainer,
  };
}

function logLevel(env: Env): LogLevel {
  const raw = (env.BROKER_LOG_LEVEL ?? '').trim();
  if (raw === '') return env.NODE_ENV === 'test' ? 'warn' : 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) throw new ConfigError(`BROKER_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got '${raw}'`);
  return raw as LogLevel;
}

/**
 * PATH, LANG and TZ for local sessions, as the broker got them (an empty PATH stays empty: that is
 * what the broker runs with). Exported for the local backend's callers that have no BrokerConfig.
 */
export function hostEnv(env: Env = process.env): HostEnv {
  return { path: env.PATH ?? '/usr/local/bin:/usr/bin:/bin', lang: env.LANG ?? 'C.UTF-8', tz: env.TZ || null };
}

/** The groups' host directory, one per deployment: a broker sweeps what its deployment's crashed predecessor left there. */
function groupDir(env: Env): string {
  const dir = (env.BROKER_GROUP_DIR ?? '').trim();
  if (dir !== '' && !path.isAbsolute(dir)) throw new ConfigError(`BROKER_GROUP_DIR must be an absolute path, got '${dir}'`);
  return path.join(dir || path.join(os.tmpdir(), 'bash-broker-groups'), deploymentName(env));
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
