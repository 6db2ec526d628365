/**
 * A bounded, numbered, resumable log of events: each event gets the next number (gap-free, so a
 * number is also the event's place in the log), the newest `capacity` are kept, and a reader that
 * comes back with a number reads on from it, told first (by the log's own notice) when part of what
 * it asked for is gone. Live readers subscribe (replay and subscription happen in one synchronous
 * step, so they see no gap and no duplicate) or wait for the next event (`nextEvent`).
 *
 * A workspace's events carry their number as `seq_id`, from 0; a task sandbox's streams wrap each
 * event as `{cursor, event}`, from 1.
 */

/** An entry: the log's number under its key, then the fields it was given. */
export type Numbered<K extends string, F> = { [P in K]: number } & F;

/** Numbers asked for that the log no longer holds. */
export interface Gap {
  /** The first and last number asked for that are gone. */
  from: number;
  to: number;
  /** The oldest number still held. */
  oldest: number;
}

export interface EventLogOptions<K extends string, N> {
  capacity: number;
  /** The field that carries an entry's number. */
  key: K;
  /** The first entry's number. */
  first: number;
  /** What a reader is told about a gap, before what is still held. */
  notice: (gap: Gap) => N;
}

export class EventLog<K extends string, F extends object, N> {
  readonly capacity: number;
  /** Grown as entries come (a log that stays short costs little), then written over, oldest first. */
  private readonly ring: (Numbered<K, F> | undefined)[] = [];
  /** Each held entry's JSON once something asked for it: readers that catch up share it. */
  private readonly texts: (string | undefined)[] = [];
  private nextNumber: number;
  private readonly subscribers = new Set<(entry: Numbered<K, F>) => void>();
  private waiters: Array<() => void> = [];
  private ended = false;

  constructor(private readonly options: EventLogOptions<K, N>) {
    this.capacity = options.capacity;
    this.nextNumber = options.first;
  }

  /** The number of the oldest entry still held (the next one's, while none is). */
  get start(): number {
    return Math.max(this.options.first, this.nextNumber - this.capacity);
  }

  /** The number the next entry gets. */
  get next(): number {
    return this.nextNumber;
  }

  /** The number of the newest entry (one before the first, while none is). */
  get last(): number {
    return this.nextNumber - 1;
  }

  /** No more entries will come: waiting readers finish once they have read the rest. */
  get closed(): boolean {
    return this.ended;
  }

  /** Appends `fields` under the next number and tells every live reader. */
  emit(fields: F): Numbered<K, F> {
    if (this.ended) throw new Error('the stream has ended');
    const entry = { [this.options.key]: this.nextNumber, ...fields } as Numbered<K, F>;
    const at = this.slot(this.nextNumber);
    this.ring[at] = entry;
    this.texts[at] = undefined;
    this.nextNumber++;
    for (const s of this.subscribers) s(entry);
    this.wake();
    return entry;
  }

  close(): void {
    this.ended = true;
    this.wake();
  }

  /** An entry's JSON; for one the log holds, serialized once and kept while it is held. */
  json(entry: Numbered<K, F>): string {
    const at = this.slot(entry[this.options.key]);
    if (this.ring[at] !== entry) return JSON.stringify(entry);
    return (this.texts[at] ??= JSON.stringify(entry));
  }

  /** Entries [from, from + limit) still held; the notice first when part of that range is gone. */
  slice(from: number, limit: number): { dropped: N | null; events: Numbered<K, F>[] } {
    const start = this.start;
    const end = Math.min(this.nextNumber, from + limit);
    const dropped = from < start ? this.options.notice({ from, to: Math.min(start, end) - 1, oldest: start }) : null;
    const events: Numbered<K, F>[] = [];
    for (let n = Math.max(from, start); n < end; n++) events.push(this.ring[this.slot(n)]!);
    return { dropped, events };
  }

  /** Replays from `since` (null: nothing), then delivers every later entry; returns the unsubscribe. */
  subscribe(since: number | null, deliver: (entry: Numbered<K, F>) => void, onDropped: (notice: N) => void): () => void {
    if (since !== null && since < this.nextNumber) {
      const { dropped, events } = this.slice(since, this.nextNumber - since);
      if (dropped) onDropped(dropped);
      for (const e of events) deliver(e);
    }
    this.subscribers.add(deliver);
    return () => this.subscribers.delete(deliver);
  }

  /** Resolves at the next entry or close, or when `signal` aborts. */
  nextEvent(signal: AbortSignal): Promise<void> {
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

  private slot(n: number): number {
    return (n - this.options.first) % this.capacity;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
