/**
 * The one port that starts "a container of its own" with its limits: a lifecycle sandbox whose image
 * no warm pool serves, a group's sandbox and a task's sandbox all start through it. Implemented once
 * on Docker (backends/docker/containers/dedicatedContainers.ts). What is a feature's own (a group's
 * loop disk, a task's daemon socket) stays in that feature's folder and reaches the container as
 * mounts, environment and an entrypoint.
 *
 * Every container a backend starts says what it is for (`kind`) and whose it is (`owner`), so a broker
 * that starts after a crash finds and removes, kind by kind, what the crashed one left.
 */
import type { ContainerRef } from './container';

/** What a container is for: a pool's warm container, or a container of its own for one owner. */
export type ContainerKind = 'pool' | 'lifecycle' | 'group' | 'task';

export interface ContainerLimits {
  /** CPU limit in cores; null: the backend's default. */
  cpus: number | null;
  /** Memory limit in bytes; null: the backend's default. */
  memoryBytes: number | null;
  /** Most processes at once; null: the backend's default. */
  pids: number | null;
  /** False: no swap beyond `memoryBytes` (the memory limit is all it gets). Default true (the engine's own rule). */
  swap?: boolean;
  /** /tmp on a filesystem of this many bytes of its own; absent or 0: the image's /tmp. */
  tmpBytes?: number;
}

/** A host directory the container sees at `containerPath`. */
export interface ContainerMount {
  hostPath: string;
  containerPath: string;
  readOnly: boolean;
}

export interface DedicatedContainerSpec {
  kind: Exclude<ContainerKind, 'pool'>;
  /** The id of the lifecycle sandbox, group sandbox (`group/sandbox`) or task the container is for; names it, with the kind. */
  owner: string;
  image: string;
  env: Readonly<Record<string, string>>;
  /** The container's main process (argv); absent: the image's own. */
  entrypoint?: readonly string[];
  limits: ContainerLimits;
  /** The network mode; null: the backend's default. */
  network: string | null;
  mounts: readonly ContainerMount[];
  /** The main process's working directory; absent: the image's. */
  workdir?: string;
  /** True: nothing but the mounts (and /tmp when it has one of its own) is writable. */
  readOnlyRoot?: boolean;
  /** A main process that exits with a failure is started again in the same container, this many times at most. */
  restartsOnFailure?: number;
}

export interface DedicatedContainer {
  readonly ref: ContainerRef;
  /** Milliseconds the engine took to create and start it. */
  readonly startMs: number;
  /** Removes the container (and its own /tmp). Safe to call twice. */
  remove(): Promise<void>;
}

export interface DedicatedContainers {
  /** Creates and starts it; rejects with a BackendError that says why (the engine's error, or its deadline). */
  start(spec: DedicatedContainerSpec): Promise<DedicatedContainer>;
  /**
   * Removes every container of `kind` this deployment has that an earlier broker left (`all`: also
   * this broker's own, for a kind that sweeps before it starts any).
   */
  sweep(kind: ContainerKind, all?: boolean): Promise<number>;
}
