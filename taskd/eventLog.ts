/**
 * The daemon's one event journal: every event it emits gets the next sequence number and one
 * envelope shape, `{"seq": N, "event": {"type", "timestamp", ...}}`. Core reads it as one upstream
 * (GET /events?after=N) and splits it into its control and coding streams; a Core that lost the
 * connection reconnects with the last seq it saw and misses nothing the journal still holds.
 */

export interface DaemonEvent {
  type: string;
  /** Unix milliseconds, when the daemon emitted it. */
  timestamp: number;
  [field: string]: unknown;
}

export interface DaemonEnvelope {
  seq: number;
  event: DaemonEvent;
}

export class EventLog {
  private readonly entries: DaemonEnvelope[] = [];
  private lastSeq = 0;
  private waiters: Array<() => void> = [];

  constructor(private readonly capacity: number) {}

  emit(type: string, fields: Record<string, unknown> = {}): DaemonEnvelope {
    const envelope = { seq: ++this.lastSeq, event: { ...fields, type, timestamp: Date.now() } };
    this.entries.push(envelope);
    if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
    return envelope;
  }

  get last(): number {
    return this.lastSeq;
  }

  /** The oldest seq still held (lastSeq + 1 when empty). */
  get oldest(): number {
    return this.entries[0]?.seq ?? this.lastSeq + 1;
  }

  /** Envelopes after `seq`, in order (those the bound dropped are simply not there). */
  after(seq: number): DaemonEnvelope[] {
    const first = this.entries.findIndex((e) => e.seq > seq);
    return first < 0 ? [] : this.entries.slice(first);
  }

  /** Resolves at the next emit, or when `signal` aborts. */
  next(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const wake = (): void => {
        signal.removeEventListener('abort', wake);
        resolve();
      };
      this.waiters.push(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }
}
