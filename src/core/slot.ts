import type { ContainerRef } from './backend';
import type { BashSession } from './bashSession';
import { SessionState, type Stateful } from './states';

/** One isolation unit and the slots that live in it. */
export class ContainerEntry {
  ref: ContainerRef | null = null;
  healthy = false;
  /** Set while the container is being replaced after a failure: its slots wait for it. */
  replacing = false;
  unhealthyReason: string | null = null;
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
  /** A working directory left by a lease that broke, to remove when the slot is rebuilt. */
  orphanWorkdir: string | null = null;
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
  lastActivityMs: number;
  constructor(
    readonly id: string,
    public slot: Slot | null,
    readonly workdir: string,
    nowMs: number,
  ) {
    this.lastActivityMs = nowMs;
  }
}
