/**
 * The port every backend implements (local processes now, Docker next, Kubernetes later).
 * The pool talks only to this interface; it never sees a process, a socket or a container API.
 */

/** A "container": an isolation unit holding several sessions (a Docker container, a local root). */
export interface ContainerRef {
  readonly id: string;
  readonly name: string;
}

export interface ContainerHealth {
  healthy: boolean;
  reason?: string;
}

export type StreamName = 'stdout' | 'stderr';

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

/** One bash in a real pseudo-terminal: bytes in, bytes out (stdout and stderr merged, as a terminal does). */
export interface TerminalProcess {
  readonly description: string;
  write(data: string | Buffer): void;
  resize(cols: number, rows: number): void;
  onData(listener: (chunk: Buffer) => void): void;
  /** Once, when bash is gone; `code` is its exit status, or 128 + the signal that killed it. */
  onExit(listener: (exit: { code: number | null; reason: string }) => void): void;
  /** Kills bash and everything it started (as far as the backend can find them). Safe to call twice. */
  close(): Promise<void>;
}

/** A file inside a container, read whole or in part. */
export interface FileChunk {
  /** `limit` bytes from `offset` at most. */
  content: Buffer;
  /** The whole file's size in bytes. */
  size: number;
}

/**
 * Paths are absolute as the container sees them; `root` is the workspace directory they must stay
 * in (the caller checked the path lexically; a backend also checks what symlinks resolve to where it can).
 * Errors: FileNotFoundError, NotAFileError, ForbiddenError (common/errors.ts).
 */
export interface FileAccess {
  readFile(container: ContainerRef, root: string, path: string, range: { offset: number; limit: number }): Promise<FileChunk>;
  writeFile(container: ContainerRef, root: string, path: string, content: Buffer): Promise<void>;
}

/** A container of its own for one lifecycle sandbox whose image no warm pool serves (the lifecycle API). */
export interface DedicatedSpec {
  /** Names the container (beside the backend's deployment and instance). */
  sandboxId: string;
  image: string;
  env: Readonly<Record<string, string>>;
  /** The sandbox's entry process, started beside the backend's own. */
  entrypoint: readonly string[];
  /** CPU limit in cores; null: the backend's default. */
  cpus: number | null;
  /** Memory limit in bytes; null: the backend's default. */
  memoryBytes: number | null;
}

export interface SessionBackend {
  readonly kind: string;
  /** Once, before any container starts: check prerequisites, sweep what a crashed broker left. */
  init?(): Promise<void>;
  /**
   * The engine's part of a container start (create and start it). The pool bounds how many run at
   * once; `connectContainer`, if any, is called after, outside that bound.
   */
  startContainer(index: number): Promise<ContainerRef>;
  /**
   * Optional second phase: makes a started container ready to serve shells (the Docker backend waits
   * for its entrypoint and opens its control shell). Throws when it cannot; the container is then
   * removed with removeContainer.
   */
  connectContainer?(container: ContainerRef): Promise<void>;
  /** Optional: a bash in a pseudo-terminal in `container` (the workspaces need it). */
  openTerminal?(container: ContainerRef, options: TerminalOptions): Promise<TerminalProcess>;
  /** Optional: files in a container (the workspaces' file routes need it). */
  readonly files?: FileAccess;
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
   * Optional: starts and connects a container of its own for one sandbox (removed with
   * removeContainer). Throws a BrokerError the client can act on (an image that is not there).
   */
  startDedicated?(spec: DedicatedSpec): Promise<ContainerRef>;
  /**
   * Optional: the address the broker reaches a container's ports at (its IP on its network), or
   * null when it has none (network mode none). Lifecycle endpoints of other ports proxy there.
   */
  containerAddress?(container: ContainerRef): Promise<string | null>;
  /** Optional: freezes every process of a container (lifecycle pause); its health checks wait meanwhile. */
  pauseContainer?(container: ContainerRef): Promise<void>;
  /** Optional: thaws a container paused by pauseContainer. */
  resumeContainer?(container: ContainerRef): Promise<void>;
  close(): Promise<void>;
}

/** Where the spec puts a lease's working directory. */
export function sessionWorkdir(sessionId: string): string {
  return `/tmp/s/${sessionId}/`;
}
