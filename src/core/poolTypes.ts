/**
 * What the pool takes and gives: acquire and execute requests, their results, a slot taken out for
 * something long-lived, and the one error of its own (a startup command that broke its session).
 */
import type { ExecResult } from './bashSession';
import type { ContainerRef, StreamName, WorkdirFile } from './backend';
import { BrokerError } from '../common/errors';

export interface AcquireRequest {
  files: readonly WorkdirFile[];
  startupCommands: readonly string[];
  signal?: AbortSignal;
}

export interface AcquireResult {
  sessionId: string;
  startupResults: ExecResult[];
}

export interface ExecuteRequest {
  command: string;
  timeoutMs: number;
  onOutput?: (stream: StreamName, chunk: Buffer) => void;
}

/**
 * A slot taken out of the pool for something long-lived (a workspace): IN_USE, so /health and
 * /metrics count it, with its working directory made; `giveBack` sends it to the usual cleanup.
 */
export interface TakenSlot {
  slotId: string;
  container: ContainerRef;
  workdir: string;
  /** Why the slot was lost while taken (its shell or container failed), or null. */
  lostReason(): string | null;
  /** Called once, when the slot is lost (right away if it already is). */
  onLost(listener: (reason: string) => void): void;
  giveBack(): void;
}

/** A startup command killed its shell: no session was leased. */
export class StartupFailedError extends BrokerError {
  constructor(index: number, reason: string) {
    super('rejected', 'startup_failed', `startup_commands[${index}] broke the session (${reason}); no session was leased`);
  }
}
