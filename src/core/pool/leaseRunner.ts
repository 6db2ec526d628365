/**
 * What the pool does to a lease's shell and working directory: a free slot made into a lease (its
 * prepared directory taken, or a new one made; the request's files written), the acquire's startup
 * commands run, and every command run on a lease (a client's timed and journaled), where a dead
 * shell or container becomes the lease's error. Apart from pool.ts, which decides when a lease
 * begins and ends (queue, retries, release, reclaim, close): this is the step in between that talks
 * to the shell and the backend.
 */
import { ShellDiedError, type BashSession, type ExecResult } from '../session/bashSession';
import { sessionWorkdir, type SessionBackend } from '../ports/backend';
import { Lease, type Slot } from './slot';
import { SessionState, type SessionStates } from './states';
import { StartupFailedError, type AcquireRequest, type AcquireResult, type ExecuteRequest } from './poolTypes';
import type { LeaseBook } from './leaseBook';
import type { PoolObserver } from '../ports/observer';
import { CHANGE_DIRECTORY_TIMEOUT_MS } from './slotRebuilder';
import type { JournalLimits } from './leaseJournal';
import { AbortedError, BrokerError, SessionBrokenError, SessionBusyError, SessionNotInUseError } from '../../common/errors';
import { newSessionId } from '../../common/ids';
import { logger } from '../../common/logger';
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';
import type { SandboxHandle } from '../sandbox/sandboxHandle';
import { SHELL_AND_FILES } from '../sandbox/sandbox';

/** The pool's options this needs (PoolOptions documents each). */
export interface LeaseRunnerOptions {
  sessionIdleTimeoutMs: number;
  defaultCommandTimeoutMs: number;
  maxOutputBytes: number;
  maxLeaseTtlMs?: number;
  journal?: JournalLimits;
  /** Where each lease is registered as a sandbox while it lives (the per-sandbox APIs find it there). */
  sandboxes?: SandboxDirectory;
}

export class LeaseRunner {
  constructor(
    private readonly backend: SessionBackend,
    private readonly states: SessionStates<Slot>,
    private readonly leases: LeaseBook,
    private readonly options: LeaseRunnerOptions,
    private readonly observer: PoolObserver,
    /** SessionPool.release: a lease that could not be made ready is given back. */
    private readonly release: (sessionId: string) => void,
  ) {}

  get maxLeaseTtlMs(): number {
    return this.options.maxLeaseTtlMs ?? this.options.sessionIdleTimeoutMs;
  }

  /** Leases `slot` for `request`: its working directory ready, its shell alive; released again on failure. */
  async prepare(slot: Slot, request: AcquireRequest): Promise<Lease> {
    const preparedId = this.takePrepared(slot);
    const lease = this.lease(slot, preparedId ?? newSessionId());
    if (request.leaseTtlMs !== undefined) lease.ttlMs = Math.min(request.leaseTtlMs, this.maxLeaseTtlMs);
    try {
      // The lease is not the client's yet: if its shell or container fails here, try another slot.
      if (preparedId === null) {
        // Not prepared (its directory vanished): today's way, a directory and a round trip into the shell.
        await this.backend.prepareWorkdir(slot.container.ref!, lease.workdir, request.files);
        await this.onLease(lease, (session) => session.changeDirectory(lease.workdir, CHANGE_DIRECTORY_TIMEOUT_MS));
      } else if (request.files.length > 0) {
        await this.backend.prepareWorkdir(slot.container.ref!, lease.workdir, request.files);
      }
      // No round trip told: a shell that died before or meanwhile is known without one.
      if (lease.brokenReason !== null || !lease.slot?.session?.alive) throw new SessionBrokenError(lease.id, lease.brokenReason ?? 'no shell');
    } catch (err) {
      this.release(lease.id);
      throw err;
    }
    return lease;
  }

  /**
   * The session id the slot's rebuild prepared (its directory made, its shell in it), or null when
   * the backend knows that directory is gone (removed behind the broker's back): it is discarded.
   */
  private takePrepared(slot: Slot): string | null {
    const id = slot.preparedId;
    slot.preparedId = null;
    const ref = slot.container.ref;
    if (id === null || !ref || !this.backend.workdirGone?.(ref, sessionWorkdir(id))) return id;
    logger.warn({ slot: slot.slotId }, "acquire: a slot's prepared working directory is gone; making a new one");
    slot.orphanWorkdirs.push(sessionWorkdir(id)); // whatever took its place goes at the next rebuild
    return null;
  }

  /** The acquire's startup commands on a prepared lease, in order; the lease is released if one fails. */
  async runStartupCommands(lease: Lease, request: AcquireRequest): Promise<AcquireResult> {
    try {
      const startupResults: ExecResult[] = [];
      for (const [index, command] of request.startupCommands.entries()) {
        if (request.signal?.aborted) throw new AbortedError('acquire');
        try {
          startupResults.push(await this.run(lease, command, this.options.defaultCommandTimeoutMs));
        } catch (err) {
          throw err instanceof SessionBrokenError ? new StartupFailedError(index, lease.brokenReason ?? err.message) : err;
        }
      }
      if (request.signal?.aborted) throw new AbortedError('acquire');
      return { sessionId: lease.id, startupResults, leaseTtlMs: lease.ttlMs, containerIndex: lease.slot?.container.index ?? -1 };
    } catch (err) {
      this.release(lease.id);
      throw err;
    }
  }

  /** A client's command on its lease: timed for the observer, kept in the lease's journal. */
  async execute(sessionId: string, request: ExecuteRequest): Promise<ExecResult> {
    const lease = this.leases.require(sessionId);
    if (lease.executing) throw new SessionBusyError(sessionId);
    const startedMs = performance.now();
    const startedAtMs = Date.now();
    try {
      const result = await this.run(lease, request.command, request.timeoutMs, request.onOutput, request.facts);
      this.observer.executed(performance.now() - startedMs, result.timedOut ? 'timeout' : result.returnCode === 0 ? 'success' : 'failed');
      lease.journal.record(request.command, request.requestId ?? null, startedAtMs, performance.now() - startedMs, result);
      return result;
    } catch (err) {
      this.observer.executed(performance.now() - startedMs, 'error');
      lease.journal.record(request.command, request.requestId ?? null, startedAtMs, performance.now() - startedMs, { error: err instanceof BrokerError ? err.code : 'internal' });
      throw err;
    }
  }

  /** One command on the lease's shell, its output bounded by the pool's maxOutputBytes. */
  private run(lease: Lease, command: string, timeoutMs: number, onOutput?: ExecuteRequest['onOutput'], usage?: boolean): Promise<ExecResult> {
    return this.onLease(lease, (session) => session.execute(command, { timeoutMs, maxOutputBytes: this.options.maxOutputBytes, onOutput, usage }));
  }

  private lease(slot: Slot, id: string): Lease {
    const lease = new Lease(id, slot, sessionWorkdir(id), Date.now(), this.options.journal);
    slot.lease = lease;
    this.states.move(slot, SessionState.IN_USE);
    this.leases.add(lease);
    // Unregistered at its release (SessionPool.release), not on its signal: see SandboxDirectory.register.
    this.options.sandboxes?.register({ id, kind: 'pool', capabilities: SHELL_AND_FILES, handle: () => this.site(id), get ended() { return lease.ended; } }, false);
    return lease;
  }

  /**
   * Where a live lease's session lives, for the per-sandbox APIs (execd). Counts as activity on the
   * lease (an idle reclaim waits). Throws as execute would for an unknown, ended or broken id.
   */
  site(sessionId: string): SandboxHandle {
    const lease = this.leases.require(sessionId);
    const slot = lease.slot;
    const container = slot?.container.ref;
    if (!slot || !container) throw new SessionBrokenError(sessionId, lease.brokenReason ?? 'no shell');
    lease.lastActivityMs = Date.now();
    return { id: sessionId, slotId: slot.slotId, container, root: lease.workdir, confined: true, ended: lease.ended, backend: this.backend };
  }

  /** Runs `work` on the lease's session; a dead shell or container becomes the lease's error. */
  private async onLease(lease: Lease, work: (session: BashSession) => Promise<ExecResult>): Promise<ExecResult> {
    const session = lease.slot?.session;
    if (!session) throw new SessionBrokenError(lease.id, lease.brokenReason ?? 'no shell');
    lease.executing = true;
    lease.lastActivityMs = Date.now();
    try {
      const result = await work(session);
      // Its container failed while it ran (a paused container is thawed to be removed, and its
      // output may still arrive): the lease's state is lost, and the answer says so.
      if (lease.brokenReason !== null) throw new SessionBrokenError(lease.id, lease.brokenReason);
      return result;
    } catch (err) {
      if (!(err instanceof ShellDiedError)) throw err;
      if (lease.brokenReason !== null) throw new SessionBrokenError(lease.id, lease.brokenReason);
      if (lease.released) throw new SessionNotInUseError(lease.id, 'released while the command was running');
      throw new SessionBrokenError(lease.id, err.reason);
    } finally {
      lease.executing = false;
      lease.lastActivityMs = Date.now();
    }
  }
}
