import type { ContainerRef } from '../ports/backend';
import type { BashSession } from '../session/bashSession';
import { DEFAULT_JOURNAL_LIMITS, LeaseJournal, type JournalLimits } from './leaseJournal';
import { SessionState, type Stateful } from './states';

/** One isolation unit and the slots that live in it. */
export class ContainerEntry {
  ref: ContainerRef | null = null;
  healthy = false;
  /** Set while the container is being replaced after a failure: its slots wait for it. */
  replacing = false;
  unhealthyReason: string | null = null;
  /** Replacements so far and the last one's reason (the dashboard lists them). */
  replaced = { count: 0, lastReason: '' };
  readonly slots: Slot[] = [];
  constructor(readonly index: number) {}
}

/** A place in the pool for one shell. Its `state` is owned by SessionStates, never set here. */
export class Slot implements Stateful {
  readonly state: SessionState = SessionState.BROKEN;
  session: BashSession | null = null;
  lease: Lease | null = null;
  /** Consecutive failed attempts to give this slot a shell (drives the retry backoff). */
  failures = 0;
  /** A rebuild is running; a second request for one is dropped. */
  rebuilding = false;
  /** Working directories left by a lease that broke (or a rebuild that failed), to remove at the next rebuild. */
  orphanWorkdirs: string[] = [];
  /**
   * The session id of this slot's next lease, chosen by its rebuild, which made its working
   * directory and started the shell in it. Secret until leased: never logged or shown.
   */
  preparedId: string | null = null;
  constructor(
    readonly slotId: string,
    readonly container: ContainerEntry,
  ) {}
}

/** One client's hold on a slot, named by the session_id the client sees. */
export class Lease {
  executing = false;
  released = false;
  brokenReason: string | null = null;
  /** Told once when the lease breaks (its shell or container failed): a workspace moves away at once. */
  onBroken: ((reason: string) => void) | null = null;
  /**
   * Taken out of the pool (pool.takeOut) by a workspace or a lifecycle sandbox: its owner alone ends
   * it, so no idle timeout, lease_ttl or operator reclaim takes it. Set once, and no call on the
   * lease (an execute, a heartbeat, execd's) changes it.
   */
  takenOut = false;
  /** The last call on the lease (its idle timeout and lease_ttl count from it); a taken-out lease keeps one too, unread by the reclaim. */
  lastActivityMs: number;
  readonly acquiredAtMs: number;
  /** The acquire's `lease_ttl` (leaseTtl.ts), or null: the pool's idle timeout alone. */
  ttlMs: number | null = null;
  /** Its executes, for GET /session/{id}/history and the trajectory file (leaseJournal.ts). */
  readonly journal: LeaseJournal;
  /**
   * Made on first use: few leases are watched (execd's commands are), and an abort builds a
   * DOMException, ~2% of the broker's CPU in episodes when every release aborted one.
   */
  private endController: AbortController | null = null;
  private over = false;
  constructor(
    readonly id: string,
    public slot: Slot | null,
    readonly workdir: string,
    nowMs: number,
    journalLimits: JournalLimits = DEFAULT_JOURNAL_LIMITS,
  ) {
    this.lastActivityMs = nowMs;
    this.acquiredAtMs = nowMs;
    this.journal = new LeaseJournal(journalLimits);
  }

  /**
   * Aborts once the lease is over (released, reclaimed or broken): what the per-sandbox APIs started
   * for it outside its shell (execd's commands and interpreters) is closed on it.
   */
  get ended(): AbortSignal {
    if (!this.endController) {
      this.endController = new AbortController();
      if (this.over) this.endController.abort();
    }
    return this.endController.signal;
  }

  end(): void {
    if (this.over) return;
    this.over = true;
    this.endController?.abort();
  }
}
