/**
 * The port every backend implements (local processes now, Docker next, Kubernetes later).
 * The pool talks only to this interface; it never sees a process, a socket or a container API.
 */
import type { SnapshotLayers } from './snapshotLayers';
import type { ContainerStarts } from './containers';
import type { ImageStore } from './imageStore';

import type { ContainerHealth, ContainerRef, TerminalProcess } from './container';
import type { NetworkReport, SessionLimitsReport, SessionNetworkControl } from './sessionNetworks';

export type { ContainerHealth, ContainerRef, TerminalProcess };

export type StreamName = 'stdout' | 'stderr';

/**
 * Kernel counters of the cgroup that holds a shell and everything it starts (backends/cgroupUsage.ts),
 * read before and after each command for its termination facts. null: this host or backend cannot
 * tell (no such cgroup, or the controller is not there): never a made-up 0.
 */
export interface UsageCounters {
  /** CPU time used by the cgroup since it was made, microseconds. */
  cpuUsec: number | null;
  /** The cgroup's peak memory charge since the last reset (resident pages and page cache), bytes. */
  memoryPeakBytes: number | null;
  /** Processes of the cgroup the OOM killer has killed since it was made. */
  oomKills: number | null;
  /**
   * The session's private disk (a filesystem of its own per lease) was full when read: its writes
   * failed with ENOSPC. Absent where the session has no disk of its own; null: it cannot be told.
   */
  diskFull?: boolean | null;
  /** Packets the session's network refused for want of a route (its egress policy); absent where it has no network of its own. */
  egressRefusals?: number | null;
  /** The flows its egress rules refused that the kernel still tracks, each `host:port proto sport` (distinct per flow); absent where it has no network of its own. */
  egressRefusedFlows?: string[] | null;
}

export interface ShellExit {
  code: number | null;
  signal: string | null;
  reason: string;
}

export interface ShellListener {
  onData(stream: StreamName, chunk: Buffer): void;
  onExit(exit: ShellExit): void;
}

export interface OpenShellOptions {
  /** Stable id of the pool slot, used to tag and confine the shell's processes. */
  slotId: string;
  /**
   * Room for the PTY workspace: a terminal instead of pipes (stdout and stderr merged). A backend
   * that cannot open one throws NotSupportedError.
   */
  pty?: { cols: number; rows: number };
  /**
   * The lease's working directory the shell is for (the slot's next lease): a backend that gives each
   * session a filesystem view of its own makes it reachable there. Absent: none yet.
   */
  workdir?: string;
  /** An extra shell of the session in slot `companionOf` (execd's): it shares that session's view of the filesystem. */
  companionOf?: string;
}

/**
 * One long-lived `bash --norc --noprofile --noediting -i` and everything it starts.
 * Writes go to bash's stdin; output arrives through the listener, stdout and stderr apart.
 */
export interface ShellProcess {
  readonly description: string;
  setListener(listener: ShellListener): void;
  write(text: string): void;
  /**
   * A terminal's ^C: SIGINT to the shell's foreground process group. A backend that delivers it
   * later (a queue in a busy container) asks `stillWanted` first and drops a ^C whose command has
   * ended: a late one would interrupt the next command. Such a backend returns a promise that
   * settles once the ^C was delivered or dropped: the session writes no next command before.
   */
  interrupt(stillWanted?: () => boolean): void | Promise<void>;
  /** SIGKILL every process the shell started at or after `sinceEpochMs` (the shell itself survives). */
  killStartedSince(sinceEpochMs: number): Promise<number>;
  /** Kill the shell and every process it ever started, escapees included. Safe to call twice. */
  close(): Promise<void>;
  /** Optional: the shell's process and its children as the OS shows them, for the log (diagnostics only). */
  describe?(): Promise<string>;
  /**
   * Optional: make this same process a pristine shell again (everything the lease started killed,
   * a fresh bash in its place) when that is much cheaper than a new one. The fresh bash starts in
   * `cwd` (after `cwdReady` resolved: the directory must exist before bash enters it) and has run the
   * session framing's init (framing.ts SHELL_INIT_SCRIPT) from its rc file: the BashSession over it
   * needs no start(). False (or a rejection, `cwdReady`'s included): the caller closes and reopens.
   */
  recycle?(cwd: string, cwdReady?: Promise<void>): Promise<boolean>;
  /**
   * Optional, synchronous and cheap (cached file descriptors, no round trip): the shell's cgroup
   * counters. `resetPeak`: the memory high-water mark is reset first (a command starts). Absent, or
   * fields null, where the backend has no cgroup of the shell's own.
   */
  usage?(resetPeak: boolean): UsageCounters;
}

export interface WorkdirFile {
  /** Relative to the working directory, already validated (no absolute path, no `..`). */
  path: string;
  content: Buffer;
}

/** A terminal for a workspace: where its bash runs, how big its window is, what it starts with. */
export interface TerminalOptions {
  /** Stable id of the pool slot the terminal's capacity comes from (tags its processes). */
  slotId: string;
  cols: number;
  rows: number;
  /** The working directory, as the container sees it. */
  cwd: string;
  /** Extra environment on top of the backend's own (TERM, the shell integration's bootstrap). */
  env: Record<string, string>;
}

/** A file inside a container, read whole or in part. */
export interface FileChunk {
  /** `limit` bytes from `offset` at most. */
  content: Buffer;
  /** The whole file's size in bytes. */
  size: number;
}

/**
 * Whose files a FileAccess operation is on: a container, and the working directory of the lease
 * whose files they are. The working directory names that lease's session: where a backend gives each
 * session a view of its own (per-lease isolation), the operation runs in that session's view, the one
 * its commands see. `root` is no name for it: it is only where paths must stay, and '/' for every
 * sandbox that owns its container.
 */
export interface FileOwner {
  readonly container: ContainerRef;
  readonly workdir: string;
}

/**
 * Paths are absolute and normalized as the container sees them; `root` is the directory they must stay
 * in ('/' for a sandbox that owns its container; the caller checked the path lexically, the backend
 * checks what symlinks resolve to). Errors: FileNotFoundError, NotAFileError, NotADirectoryError,
 * ForbiddenError (common/errors.ts). The workspace's routes use the first two; execd's all of them.
 */
export interface FileAccess {
  readFile(owner: FileOwner, root: string, path: string, range: { offset: number; limit: number }): Promise<FileChunk>;
  writeFile(owner: FileOwner, root: string, path: string, content: Buffer): Promise<void>;
  /** The entry at `path`, symlinks followed. */
  stat(owner: FileOwner, root: string, path: string): Promise<EntryInfo>;
  /**
   * Entries below the directory `dir` (itself no symlink: NotADirectoryError), `maxDepth` levels down,
   * in any order (the caller sorts), at most `maxEntries` + 1 of them (the caller refuses more).
   * Symlinks are listed, never followed.
   */
  list(owner: FileOwner, root: string, dir: string, maxDepth: number, maxEntries: number): Promise<EntryInfo[]>;
  /** `file`: a non-directory (a symlink itself, not its target); `directory`: recursively, a missing one is no error. */
  remove(owner: FileOwner, root: string, path: string, kind: 'file' | 'directory'): Promise<void>;
  /** chmod, then chown to names (or numeric ids) as the container knows them; symlinks followed. */
  setPermissions(owner: FileOwner, root: string, path: string, permission: Permission): Promise<void>;
  /** rename(2) semantics: `dest`'s directory must exist; an existing file at `dest` is replaced. */
  move(owner: FileOwner, root: string, src: string, dest: string): Promise<void>;
  /** mkdir -p, then the mode and owner on the directory itself (parents made get the default). */
  makeDirectory(owner: FileOwner, root: string, path: string, permission: Permission): Promise<void>;
  /** The file's bytes from `offset`, `length` of them (the caller checked both against its stat's size). */
  readStream(owner: FileOwner, root: string, path: string, offset: number, length: number): Promise<NodeJS.ReadableStream>;
  /**
   * Writes the stream to `path` (parents made), then applies `permission`; the file appears whole or
   * not at all. Rejects with what `content` errors with (a client gone, a size limit passed).
   */
  writeStream(owner: FileOwner, root: string, path: string, content: NodeJS.ReadableStream, permission: Partial<Permission>): Promise<number>;
}

export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

/** One entry of a container's filesystem, as execd's FileInfo reports it. */
export interface EntryInfo {
  path: string;
  type: EntryType;
  size: number;
  modifiedMs: number;
  /** The inode's change time where the filesystem keeps no birth time (most do not report one). */
  createdMs: number;
  /** User and group names, or numeric ids where the container has no name for them. */
  owner: string;
  group: string;
  /** Permission bits (0o755), set-id and sticky bits included. */
  mode: number;
}

export interface Permission {
  /** Permission bits (0o755). */
  mode: number;
  owner?: string;
  group?: string;
}

/**
 * Resource use of one sandbox, as its backend can see it (execd's /metrics). `scope` says what was
 * measured: the container's own cgroup (Docker), or the session's own processes (local).
 */
export interface ResourceSample {
  scope: string;
  /** CPUs the sandbox may use (its quota, else the cpus it may run on). */
  cpuCount: number;
  /** CPU time used so far, in microseconds (monotonic for a cgroup; a process sum may drop when one exits). */
  cpuUsageUs: number;
  memoryLimitBytes: number;
  memoryUsedBytes: number;
}

/** Samples a sandbox's resource use; `slotId` names the local session whose processes count. */
export interface ResourceMeter {
  sample(container: ContainerRef, slotId: string): Promise<ResourceSample>;
}

/** Workspaces' terminals: a bash in a pseudo-terminal in a container. */
export interface Terminals {
  open(container: ContainerRef, options: TerminalOptions): Promise<TerminalProcess>;
}

/** The lifecycle's pause: every process of a container frozen, and thawed; its health checks wait meanwhile. */
export interface ContainerPausing {
  pause(container: ContainerRef): Promise<void>;
  resume(container: ContainerRef): Promise<void>;
}

/**
 * A backend: a required core (containers, shells, working directories), the pool's optional hooks
 * (init, connectContainer, workdirGone), and the capabilities some backends have, each an object a
 * feature asks for (`backend.terminals`), absent where the backend has none (the feature answers 501);
 * the kinds of container it starts beyond a pool's are declared the same way (`containers.kinds`).
 */
export interface SessionBackend {
  readonly kind: string;
  /** Once, before any container starts: check prerequisites, sweep what a crashed broker left. */
  init?(): Promise<void>;
  /**
   * Every container it starts (containers.ts): a pool's (`{ kind: 'pool', index }`: the engine's
   * part, create and start; `connectContainer`, if any, follows), and those of the kinds it declares.
   */
  readonly containers: ContainerStarts;
  /**
   * Optional second phase: makes a started container ready to serve shells (the Docker backend waits
   * for its entrypoint and opens its control shell). Throws when it cannot; the container is then
   * removed with removeContainer.
   */
  connectContainer?(container: ContainerRef): Promise<void>;
  removeContainer(container: ContainerRef): Promise<void>;
  checkContainer(container: ContainerRef): Promise<ContainerHealth>;
  openShell(container: ContainerRef, options: OpenShellOptions): Promise<ShellProcess>;
  /**
   * Creates `dir` (parents included) and writes `files` under it; `dir` may exist already (a slot's
   * prepared directory). Without files it may wait to be merged with other requests of the container.
   */
  prepareWorkdir(container: ContainerRef, dir: string, files: readonly WorkdirFile[]): Promise<void>;
  /**
   * Removes `dir`. The pool does not wait for it (no slot waits on a removal): a backend queues it,
   * merges it with others, and keeps one that failed to try again with a later one.
   */
  removeWorkdir(container: ContainerRef, dir: string): Promise<void>;
  /**
   * Optional, synchronous and cheap (no round trip): true when `dir` is known to be missing (removed
   * behind the broker's back). False when it is there or the backend cannot tell without asking.
   */
  workdirGone?(container: ContainerRef, dir: string): boolean;
  /**
   * The address the broker reaches a container's ports at (its IP on its network), or null when it
   * has none (network mode none). Lifecycle endpoints of other ports proxy there.
   */
  containerAddress(container: ContainerRef): Promise<string | null>;
  close(): Promise<void>;

  /** Capability: terminals (the workspaces need it). */
  readonly terminals?: Terminals;
  /** Capability: files in a container (the workspaces' and execd's file routes need it). */
  readonly files?: FileAccess;
  /** Capability: a sandbox's CPU and memory use (execd's /metrics needs it). */
  readonly meter?: ResourceMeter;
  /** Capability: the lifecycle's pause and resume. */
  readonly pausing?: ContainerPausing;
  /** Capability: per-lease filesystem isolation; its state for /health (absent: the backend has none). */
  readonly isolation?: { status(): IsolationReport };
  /** Capability: snapshots of sessions' views (ports/snapshotLayers.ts; absent: the routes answer 501). */
  readonly snapshots?: SnapshotLayers;
  /** Capability: per-session networks and their egress policy (absent: sessions share their container's). */
  readonly networks?: SessionNetworkControl;
  /** Capability: an engine's images, pulled on demand, each with a pool of its own (docs/images.md). */
  readonly images?: EngineImages;
}

/** What images on demand need of a backend: its engine's images, and a backend of the same kind per image. */
export interface EngineImages {
  readonly store: ImageStore;
  /** A backend like this one whose containers run `image`, labelled `deployment` (its own sweep stays its own). */
  poolBackend(image: string, deployment: string): SessionBackend;
  /** Removes the image pools' containers an earlier broker of `deployment` left, created before `startedAtMs`. */
  sweepPools(deployment: string, startedAtMs: number): Promise<number>;
}

/** Per-lease filesystem isolation as /health reports it (docs/isolation.md). */
export interface IsolationReport {
  /** Asked for (BROKER_SESSION_ISOLATION). */
  enabled: boolean;
  isolatedContainers: number;
  /** Containers whose sessions share their files though isolation was asked for. */
  unisolatedContainers: number;
  /** Why the last of those could not isolate; null when none. */
  refusal: string | null;
  diskBytesPerSession: number;
  sharedPaths: string[];
  /** The sessions' networks, where the backend gives them their own (absent: it does not). */
  network?: NetworkReport;
  /** The sessions' memory and CPU limits, where the backend sets them. */
  sessionLimits?: SessionLimitsReport;
  /** Releases whose session's view was rolled back to the image's in its own namespaces (a rewind), since the start. */
  rewoundReleases?: number;
}

export type { EgressPolicy, NetworkReport, SessionLimitsReport, SessionNetworkControl } from './sessionNetworks';

/** Where the pool API puts a lease's working directory. */
export function sessionWorkdir(sessionId: string): string {
  return `/tmp/s/${sessionId}/`;
}
