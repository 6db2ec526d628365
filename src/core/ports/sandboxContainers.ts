/**
 * The port the group service starts its sandboxes through: one dedicated container per sandbox, with
 * enforced limits, files placed read-only, a terminal, and one-off tool runs. Implemented on Docker
 * (backends/docker/groups/groupContainers.ts); a backend without dedicated containers has none, and the
 * group service answers 501.
 *
 * Type-state: `start` gives a StartedSandboxContainer, the only object that can run or remove
 * anything, so nothing can be asked of a container that is not there.
 */
import type { ContainerHealth, ContainerRef, TerminalProcess } from './container';
import type { SandboxLimits } from '../groups/computeLimits';

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

export interface ToolRun {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  timedOut: boolean;
}

export interface StartedSandboxContainer {
  readonly ref: ContainerRef;
  /** Where the sandbox's files are, as it sees them (its tools and the broker's helpers). */
  readonly filesDir: string;
  /** Its working directory (on the size-limited disk). */
  readonly workdir: string;
  /** How the disk limit is enforced here, in words, for the answer. */
  readonly diskEnforcement: string;
  openTerminal(env: Record<string, string>, size: { cols: number; rows: number }): Promise<TerminalProcess>;
  /** Runs `argv` (no terminal), `stdin` written then closed; killed after `timeoutMs`. */
  run(argv: string[], stdin: string, timeoutMs: number): Promise<ToolRun>;
  check(): Promise<ContainerHealth>;
  /** Removes the container, its disk and its files. Safe to call twice. */
  remove(): Promise<void>;
}

export interface SandboxContainers {
  readonly kind: string;
  start(spec: SandboxContainerSpec, signal?: AbortSignal): Promise<StartedSandboxContainer>;
  /** Removes every sandbox container (and disk) an earlier broker of this deployment left. */
  sweep(hostRoot: string): Promise<number>;
}
