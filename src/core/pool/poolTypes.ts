/**
 * What the pool takes and gives: acquire and execute requests, their results, a slot taken out for
 * something long-lived, and the one error of its own (a startup command that broke its session).
 */
import type { BashSession, ExecResult } from '../session/bashSession';
import type { ContainerRef, StreamName, WorkdirFile } from '../ports/backend';
import { brokerError } from '../../common/errors';
import type { ReclaimReason } from './leaseTtl';

export interface AcquireRequest {
  files: readonly WorkdirFile[];
  startupCommands: readonly string[];
  signal?: AbortSignal;
  /** This acquire's own timeout (capped by the pool's). */
  acquireTimeoutMs?: number;
  /** The lease's `lease_ttl` (capped by the pool's maximum); none: the idle timeout alone. */
  leaseTtlMs?: number;
}

export interface GroupAcquireRequest extends AcquireRequest {
  n: number;
  /** Each session on a different container. */
  spread: boolean;
}

export interface AcquireResult {
  sessionId: string;
  startupResults: ExecResult[];
  /** The lease_ttl granted (capped), or null. */
  leaseTtlMs: number | null;
  /** Which container the session is on (its index in the pool), for group members' spread. */
  containerIndex: number;
}

/** The queue and its recent waits, and reclaims by reason: /health's additive part. */
export interface PoolStats {
  waiting: number;
  waitP50Ms: number | null;
  reclaimed: Record<ReclaimReason, number>;
}

export interface ExecuteRequest {
  command: string;
  timeoutMs: number;
  /** Measure the command's kernel figures (cpu, memory, OOM) for its termination facts. */
  facts?: boolean;
  /** The client's request_id, recorded in the lease's journal. */
  requestId?: string;
  onOutput?: (stream: StreamName, chunk: Buffer) => void;
}

/**
 * A slot taken out of the pool for something long-lived (a workspace): IN_USE, so /health and
 * /metrics count it, with its working directory made; `giveBack` sends it to the usual cleanup.
 */
export interface TakenSlot {
  /** The lease's session id (pool.site resolves it). */
  sessionId: string;
  slotId: string;
  container: ContainerRef;
  workdir: string;
  /**
   * The lease's own shell, started and in `workdir` (null once it is gone). Nobody but the taker
   * uses a taken slot, so the taker may run its commands there rather than open a shell of its own.
   */
  shell(): BashSession | null;
  /** Why the slot was lost while taken (its shell or container failed), or null. */
  lostReason(): string | null;
  /** Called once, when the slot is lost (right away if it already is). */
  onLost(listener: (reason: string) => void): void;
  giveBack(): void;
}

/** A startup command killed its shell: no session was leased. */
export class StartupFailedError extends brokerError('rejected', 'startup_failed', (index: number, reason: string) => `startup_commands[${index}] broke the session (${reason}); no session was leased`) {}

/** An operator named a container the pool does not have. */
export class ContainerNotFoundError extends brokerError('not_found', 'container_not_found', (index: number, count: number) => `no container ${index}: the pool has containers 0 to ${count - 1}`) {}

/** A slot taken out (takeOut) for a workspace or a lifecycle sandbox is ended with its owner, not as a lease. */
export class LeaseHeldError extends brokerError('busy', 'lease_taken_out', (id: string) => `session ${id} holds a workspace or a lifecycle sandbox: end that instead (DELETE /workspaces/{id} or DELETE /v1/sandboxes/{id})`) {}
