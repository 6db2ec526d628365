/**
 * Settings of the Docker containers (BROKER_IMAGE, BROKER_DEPLOYMENT, BROKER_CONTAINER_*,
 * BROKER_SESSION_PIDS_LIMIT, BROKER_NETWORK_MODE, BROKER_DOCKER_*): image, limits, health timings and
 * transport. Resolved with the rest of the configuration (config.ts) and validated the same way; a
 * file of its own, as the task and workspace settings are, for a group whose values are checked
 * against each other (pids, memory and its tmpfs share).
 */
import path from 'node:path';
import { bytes, ConfigError, int, positiveFloat, seconds, type Env } from './envValues';
import { loadIsolationConfig, type IsolationConfig } from './isolationConfig';

export interface DockerConfig {
  image: string;
  /** Containers of one deployment name belong to one broker at a time; a new start sweeps the rest. */
  deployment: string;
  cpus: number;
  memoryBytes: number;
  pidsLimit: number;
  /**
   * Each session's own share of its container's pids (0: none), so a fork bomb leaves its
   * neighbours room to fork (sessionPids.ts: needs cgroup v1 and the engine's host).
   */
  sessionPidsLimit: number;
  /**
   * Each session's own memory and CPUs within its container (sessionUsage.ts; BROKER_SESSION_MEMORY,
   * BROKER_SESSION_CPUS or a pool's `session_memory`, `session_cpus`): past its memory, the OOM
   * killer picks among its own processes; its CPU share is equal to every neighbour's, capped at
   * `cpus` when set (0: no cap).
   */
  sessionLimits: { memoryBytes: number; cpus: number };
  /**
   * Size of a tmpfs volume at /tmp, where the working directories are (0: none, /tmp is in the
   * container's writable layer, which overlay2 on ext4 cannot cap: a disk filler fills the host).
   */
  tmpBytes: number;
  networkMode: string;
  pingTimeoutMs: number;
  /**
   * A running, unpaused container whose pings time out is replaced only once its control lane has
   * answered nothing for this long: on a CPU-starved host a healthy container can miss a ping, and
   * replacing it costs every lease on it its state.
   */
  stallTimeoutMs: number;
  /**
   * How long the engine may take to create and start a container before the start fails (and
   * the pool retries it): a stuck engine answers nothing, and a start without a deadline would
   * hold its start slot for good (docs/known-limits.md).
   */
  startTimeoutMs: number;
  /**
   * How a bash reaches the broker: `fifo`, pipes the container's entrypoint spawns it on (needs the
   * engine on this host, or `fifoRoot` mounted at the same path); `exec`, one `docker exec` each;
   * `auto`, pipes when the first container shows they work, else exec.
   */
  transport: 'auto' | 'fifo' | 'exec';
  /**
   * Host directory of the pipes (BROKER_DOCKER_FIFO_DIR); null: the default, chosen at start
   * (/run/bash-broker, or /dev/shm/bash-broker where /run is on a disk: backends/docker/shells/fifoRoot.ts).
   */
  fifoRoot: string | null;
  /** Per-lease filesystem isolation of the pool's sessions (isolationConfig.ts). */
  isolation: IsolationConfig;
}

export function loadDockerConfig(env: Env): DockerConfig {
  const transport = (env.BROKER_DOCKER_TRANSPORT ?? 'auto').trim() || 'auto';
  if (transport !== 'auto' && transport !== 'fifo' && transport !== 'exec') {
    throw new ConfigError(`BROKER_DOCKER_TRANSPORT must be 'auto', 'fifo' or 'exec', got '${transport}'`);
  }
  const fifoRoot = (env.BROKER_DOCKER_FIFO_DIR ?? '').trim() || null;
  if (fifoRoot !== null && !path.isAbsolute(fifoRoot)) throw new ConfigError(`BROKER_DOCKER_FIFO_DIR must be an absolute path, got '${fifoRoot}'`);
  const pidsLimit = int(env, 'BROKER_CONTAINER_PIDS_LIMIT', 1024, { min: 16 });
  // A quarter by default: one fork bomb leaves three quarters of the container to the rest.
  const sessionPidsLimit = int(env, 'BROKER_SESSION_PIDS_LIMIT', Math.max(16, Math.floor(pidsLimit / 4)), { min: 0 });
  if (sessionPidsLimit > pidsLimit) {
    throw new ConfigError(`BROKER_SESSION_PIDS_LIMIT (${sessionPidsLimit}) must not exceed BROKER_CONTAINER_PIDS_LIMIT (${pidsLimit}); 0 turns it off`);
  }
  const memoryBytes = bytes(env, 'BROKER_CONTAINER_MEMORY', 1024 ** 3);
  const tmpBytes = bytes(env, 'BROKER_CONTAINER_TMP_SIZE', 0, { zeroIsOff: true });
  // tmpfs pages are charged to the container's memory: a full /tmp must leave its processes room,
  // or the OOM killer (which does not count tmpfs files) picks a process instead of the filler.
  if (tmpBytes > memoryBytes / 2) {
    throw new ConfigError(`BROKER_CONTAINER_TMP_SIZE must be at most half of BROKER_CONTAINER_MEMORY (${memoryBytes} bytes): its files are charged to the container's memory`);
  }
  const image = (env.BROKER_IMAGE ?? '').trim() || 'bash-broker-sandbox:latest';
  const cpus = positiveFloat(env, 'BROKER_CONTAINER_CPUS', 1);
  const isolation = loadIsolationConfig(env, memoryBytes);
  return {
    image,
    deployment: deploymentName(env),
    cpus,
    memoryBytes,
    pidsLimit,
    sessionPidsLimit,
    tmpBytes,
    networkMode: (env.BROKER_NETWORK_MODE ?? '').trim() || 'bridge',
    pingTimeoutMs: seconds(env, 'BROKER_CONTAINER_PING_TIMEOUT', 5),
    stallTimeoutMs: seconds(env, 'BROKER_CONTAINER_STALL_TIMEOUT', 30),
    startTimeoutMs: seconds(env, 'BROKER_CONTAINER_START_TIMEOUT', 120),
    transport,
    fifoRoot,
    isolation,
    sessionLimits: sessionLimits(env, memoryBytes, cpus, isolation),
  };
}

/** BROKER_DEPLOYMENT: also names the groups' host directory (config.ts). */
export function deploymentName(env: Env): string {
  const name = (env.BROKER_DEPLOYMENT ?? '').trim() || 'default';
  if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/.test(name)) {
    throw new ConfigError(`BROKER_DEPLOYMENT must be 1-63 letters, digits, '_', '.' or '-', got '${name}'`);
  }
  return name;
}

/**
 * A session's memory: half its container's by default, so one hog is OOM-killed in its own cgroup
 * while half the container stays for its neighbours; isolated, at least its private disk and a
 * quarter of the container more (its disk's pages are charged to it: a full disk is ENOSPC, not an
 * OOM kill). Its CPUs: no cap by default (equal
 * shares already divide a busy container fairly).
 */
function sessionLimits(env: Env, memoryBytes: number, cpus: number, isolation: IsolationConfig): DockerConfig['sessionLimits'] {
  const disk = isolation.enabled ? isolation.diskBytes : 0;
  const sessionMemory = bytes(env, 'BROKER_SESSION_MEMORY', Math.floor(Math.min(memoryBytes, Math.max(memoryBytes / 2, disk + memoryBytes / 4))), { zeroIsOff: true });
  if (sessionMemory > memoryBytes) throw new ConfigError(`BROKER_SESSION_MEMORY must be at most BROKER_CONTAINER_MEMORY (${memoryBytes} bytes); 0 turns it off`);
  if (sessionMemory > 0 && isolation.enabled && sessionMemory <= isolation.diskBytes) {
    throw new ConfigError(`BROKER_SESSION_MEMORY must be more than BROKER_SESSION_DISK_BYTES (${isolation.diskBytes}): a session's private disk is charged to its memory`);
  }
  const sessionCpus = (env.BROKER_SESSION_CPUS ?? '').trim() === '' ? 0 : positiveFloat(env, 'BROKER_SESSION_CPUS', cpus);
  if (sessionCpus > cpus) throw new ConfigError(`BROKER_SESSION_CPUS must be at most BROKER_CONTAINER_CPUS (${cpus})`);
  return { memoryBytes: sessionMemory, cpus: sessionCpus };
}
