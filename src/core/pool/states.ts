/**
 * The session state machine of the pool API's sessions, owned here and nowhere else:
 *
 *   AVAILABLE --acquire--> IN_USE --release--> CLEANING --> AVAILABLE
 *   IN_USE / CLEANING / AVAILABLE --(error)--> BROKEN --(recreated)--> AVAILABLE
 *
 * Every change goes through `SessionStates.move`, which rejects a transition the table does not
 * allow, and keeps the per-state counts that /health and /metrics read.
 */
export enum SessionState {
  AVAILABLE = 'available',
  IN_USE = 'in_use',
  CLEANING = 'cleaning',
  BROKEN = 'broken',
}

const ALLOWED: Record<SessionState, readonly SessionState[]> = {
  [SessionState.AVAILABLE]: [SessionState.IN_USE, SessionState.BROKEN],
  [SessionState.IN_USE]: [SessionState.CLEANING, SessionState.BROKEN],
  [SessionState.CLEANING]: [SessionState.AVAILABLE, SessionState.BROKEN],
  [SessionState.BROKEN]: [SessionState.AVAILABLE],
};

export class IllegalTransitionError extends Error {
  constructor(slotId: string, from: SessionState, to: SessionState) {
    super(`illegal session transition for ${slotId}: ${from} -> ${to}`);
  }
}

export interface Stateful {
  readonly slotId: string;
  readonly state: SessionState;
}

export type StateCounts = Record<SessionState, number>;

/** Owns the `state` field of every slot it registers. */
export class SessionStates<T extends Stateful> {
  private readonly counts: StateCounts = { available: 0, in_use: 0, cleaning: 0, broken: 0 };
  private readonly members = new Set<T>();

  constructor(private readonly onChange?: (slot: T, from: SessionState | undefined, to: SessionState) => void) {}

  /** Adds a slot in its first state (AVAILABLE once its shell is up, or BROKEN if it failed). */
  add(slot: T, initial: SessionState.AVAILABLE | SessionState.BROKEN): void {
    if (this.members.has(slot)) throw new Error(`slot ${slot.slotId} registered twice`);
    this.members.add(slot);
    (slot as { state: SessionState }).state = initial;
    this.counts[initial]++;
    this.onChange?.(slot, undefined, initial);
  }

  has(slot: T): boolean {
    return this.members.has(slot);
  }

  remove(slot: T): void {
    if (!this.members.delete(slot)) return;
    this.counts[slot.state]--;
  }

  static canMove(from: SessionState, to: SessionState): boolean {
    return ALLOWED[from].includes(to);
  }

  move(slot: T, to: SessionState): void {
    if (!this.members.has(slot)) throw new Error(`slot ${slot.slotId} is not registered`);
    const from = slot.state;
    if (!SessionStates.canMove(from, to)) throw new IllegalTransitionError(slot.slotId, from, to);
    this.counts[from]--;
    this.counts[to]++;
    (slot as { state: SessionState }).state = to;
    this.onChange?.(slot, from, to);
  }

  count(state: SessionState): number {
    return this.counts[state];
  }

  snapshot(): StateCounts & { total: number } {
    return { ...this.counts, total: this.members.size };
  }
}
