/**
 * The one port that starts containers (SessionBackend.containers): a pool's warm container, a
 * lifecycle sandbox's container of its own (an image no warm pool serves), a sandbox group member's
 * and a task sandbox's. One order per start, its kind first; a group's and a task's specifics are
 * small option objects, and what is theirs on an engine (a group's loop disk and tools, a task's
 * daemon socket and relay) are helpers on the backend's side (backends/docker/groups, tasks). A
 * backend says which kinds it starts (`kinds`); a feature whose kind it lacks answers 501.
 *
 * Every container a backend starts says what it is for (`kind`) and whose it is (`owner`), so a broker
 * that starts after a crash finds and removes, kind by kind, what the crashed one left.
 */
import type { ContainerHealth, ContainerRef, TerminalProcess } from './container';
import type { CloneSource, DaemonLink } from './taskPorts';
import type { SandboxLimits } from '../groups/computeLimits';

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

/** A sandbox group member's specifics: its limits, its read-only files, its database sockets. */
export interface SandboxContainerSpec {
  /** The sandbox's id (names the container, with the group's). */
  sandboxId: string;
  groupId: string;
  limits: SandboxLimits;
  /** Host directory the backend may use for this sandbox (its disk image, its files); removed after. */
  hostDir: string;
  files: PlacedFile[];
  /** Host directory of the sandbox's database sockets (mounted read-only), or null. */
  socketDir: string | null;
  forwards: SocketForward[];
  env: Record<string, string>;
}

export interface PlacedFile {
  /** A plain file name (no directories) under the sandbox's read-only files directory. */
  name: string;
  content: Buffer;
}

/** A host unix socket the sandbox reaches at 127.0.0.1:`port` (its own loopback) and at `socketInContainer`. */
export interface SocketForward {
  name: string;
  hostSocketPath: string;
  port: number;
}

export interface ToolRun {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  timedOut: boolean;
}

/**
 * Where the per-sandbox APIs (execd's commands, files and metrics) reach a container of its own that
 * a helper started (a group member's, a task's): the backend whose `containers` started it serves
 * shells, files and metrics in it as in its own (SessionBackend.openShell, files and meter take
 * `ref`), and execd's commands start in `workdir`.
 */
export interface ContainerShells {
  readonly ref: ContainerRef;
  readonly workdir: string;
}

/**
 * A group member's started container. Type-state: only a started one can run or remove anything,
 * so nothing can be asked of a container that is not there.
 */
export interface StartedSandboxContainer {
  readonly ref: ContainerRef;
  /** Where the sandbox's files are, as it sees them (its tools and the broker's helpers). */
  readonly filesDir: string;
  /** Its working directory (on the size-limited disk). */
  readonly workdir: string;
  /** How the disk limit is enforced here, in words, for the answer. */
  readonly diskEnforcement: string;
  /** Where execd reaches it; null: the backend serves no shells in it (only its own API reaches it). */
  readonly shells: ContainerShells | null;
  openTerminal(env: Record<string, string>, size: { cols: number; rows: number }): Promise<TerminalProcess>;
  /** Runs `argv` (no terminal), `stdin` written then closed; killed after `timeoutMs`. */
  run(argv: string[], stdin: string, timeoutMs: number): Promise<ToolRun>;
  check(): Promise<ContainerHealth>;
  /** Removes the container, its disk and its files. Safe to call twice. */
  remove(): Promise<void>;
}

/** A task sandbox's started container, its daemon in it (not yet answering). */
export interface TaskContainer {
  readonly link: DaemonLink;
  /**
   * What the daemon sends on its model calls in place of a key: the backend's relay for this
   * sandbox takes it, and only it, and attaches the real key. The sandbox never holds a key.
   */
  readonly capability: string;
  /** Milliseconds the engine took to create and start it. */
  readonly startMs: number;
  /** Where execd reaches it; null: the backend serves no shells in it (only its daemon's API reaches it). */
  readonly shells: ContainerShells | null;
  /** Where `repo` (org/name) is cloned from, as the daemon sees it. */
  cloneSource(repo: string): CloneSource;
  /** Removes the container and what Core kept for it (its sockets, its relay). Safe to call twice. */
  remove(): Promise<void>;
}

/** One start: what the container is for, and that kind's specifics. */
export type ContainerOrder =
  | { kind: 'pool'; index: number }
  /** Started and connected: its shells are served as a pool container's; removed with removeContainer. */
  | { kind: 'lifecycle'; spec: DedicatedContainerSpec }
  | { kind: 'group'; group: SandboxContainerSpec }
  | { kind: 'task'; task: { id: string } };

/** What a start of each kind gives. */
export interface StartedContainers {
  pool: ContainerRef;
  lifecycle: ContainerRef;
  group: StartedSandboxContainer;
  task: TaskContainer;
}

/** What an earlier broker of this deployment left, by kind: a group's also leaves mounts under its host root. */
export type ContainerSweep = { kind: 'group'; hostRoot: string } | { kind: 'task' };

export interface ContainerStarts {
  /** The kinds this backend starts. */
  readonly kinds: ReadonlySet<ContainerKind>;
  /**
   * Creates and starts it; rejects with a BrokerError that says why (an image that is not there, the
   * engine's error or its deadline). The pool bounds how many of its own start at once; it connects
   * them after (SessionBackend.connectContainer), outside that bound.
   */
  start<K extends ContainerKind>(order: Extract<ContainerOrder, { kind: K }>): Promise<StartedContainers[K]>;
  /** Removes every container of the kind that an earlier broker of this deployment left. */
  sweep(order: ContainerSweep): Promise<number>;
}
