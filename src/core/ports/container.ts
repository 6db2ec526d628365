/**
 * A container as every port names it: a session backend's, a container of its own
 * (containers.ts), a group's sandbox; and a terminal in one.
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

/** One bash in a real pseudo-terminal: bytes in, bytes out (stdout and stderr merged, as a terminal does). */
export interface TerminalProcess {
  readonly description: string;
  write(data: string | Buffer): void;
  resize(cols: number, rows: number): void;
  onData(listener: (chunk: Buffer) => void): void;
  /** Once, when bash is gone; `code` is its exit status, or 128 + the signal that killed it. */
  onExit(listener: (exit: { code: number | null; reason: string }) => void): void;
  /**
   * SIGINT to the terminal's foreground process group, only while a command owns the terminal: that
   * group is not bash's own (`shellPid`, as bash reported its `$$`). Unlike a ^C typed into the
   * terminal, it can never reach bash at its prompt or while it reads a line. Resolves true when it
   * was sent, false when bash owns the terminal (or the process could not be read).
   */
  interruptForeground(shellPid: number): Promise<boolean>;
  /**
   * SIGKILL every process the terminal's bash (`shellPid`, null when bash has not said it yet)
   * started at or after `sinceEpochMs`; bash itself survives. Resolves to how many.
   */
  killStartedSince(shellPid: number | null, sinceEpochMs: number): Promise<number>;
  /** Kills bash and everything it started (as far as the backend can find them). Safe to call twice. */
  close(): Promise<void>;
}
