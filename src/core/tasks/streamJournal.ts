/**
 * One of a sandbox's two streams (control, coding): every event gets the next cursor (1, 2, 3, ...),
 * and the newest `capacity` are kept so a client that reconnects with the last cursor it saw gets
 * everything after it, once. A client further behind than the journal holds is told so (a
 * `cursor_expired` event) and continues from the oldest kept.
 */
import type { TaskEvent } from '../ports/taskPorts';

export interface StreamEnvelope {
  cursor: number;
  event: TaskEvent;
}

export interface JournalRead {
  envelopes: StreamEnvelope[];
  /** Set when events after the asked cursor were already dropped: the notice to send first. */
  expired?: StreamEnvelope;
}

export class StreamJournal {
  private readonly entries: StreamEnvelope[] = [];
  private lastCursor = 0;
  private waiters: Array<() => void> = [];
  private ended = false;

  constructor(private readonly capacity: number) {}

  get last(): number {
    return this.lastCursor;
  }

  /** No more events will come (the sandbox ended): readers finish once they have read the rest. */
  get closed(): boolean {
    return this.ended;
  }

  append(event: TaskEvent): StreamEnvelope {
    if (this.ended) throw new Error('the stream has ended');
    const envelope = { cursor: ++this.lastCursor, event };
    this.entries.push(envelope);
    if (this.entries.length > this.capacity) this.entries.shift();
    this.wake();
    return envelope;
  }

  close(): void {
    this.ended = true;
    this.wake();
  }

  /** Everything after `cursor`. A cursor ahead of the stream reads as "nothing yet". */
  read(cursor: number): JournalRead {
    const oldest = this.entries[0]?.cursor ?? this.lastCursor + 1;
    const first = Math.max(cursor + 1, oldest);
    const envelopes = this.entries.slice(first - oldest);
    if (cursor + 1 >= oldest) return { envelopes };
    const notice: TaskEvent = { type: 'cursor_expired', timestamp: Date.now(), requested: cursor, oldest, detail: `events ${cursor + 1} to ${oldest - 1} are no longer kept; continuing from ${oldest}` };
    return { envelopes, expired: { cursor: oldest - 1, event: notice } };
  }

  /** Resolves at the next append or close, or when `signal` aborts. */
  next(signal: AbortSignal): Promise<void> {
    if (this.ended || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        signal.removeEventListener('abort', wake);
        resolve();
      };
      this.waiters.push(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
