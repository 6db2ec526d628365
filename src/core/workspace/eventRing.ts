/**
 * A workspace's events: one seq counter (gap-free, from 0, so a seq is also the event's absolute
 * index), a bounded ring of the latest ones, and live subscribers. Replay and subscription happen in
 * one synchronous step, so a `since` reader gets no gap and no duplicate.
 */

export type WorkspaceEvent = { seq_id: number; type: string } & Record<string, unknown>;

/** Said first when some of the events asked for are gone from the ring. */
export interface DroppedNotice {
  type: 'dropped';
  /** The first and last seq asked for that are gone. */
  from_seq: number;
  to_seq: number;
  /** The oldest seq still in the ring. */
  ring_start: number;
}

export type Subscriber = (event: WorkspaceEvent) => void;

export class EventRing {
  private readonly ring: (WorkspaceEvent | undefined)[];
  /** Each held event's JSON once something asked for it: viewers that catch up share it. */
  private readonly texts: (string | undefined)[];
  private nextSeq = 0;
  private readonly subscribers = new Set<Subscriber>();

  constructor(readonly capacity: number) {
    this.ring = new Array<WorkspaceEvent | undefined>(capacity);
    this.texts = new Array<string | undefined>(capacity);
  }

  /** The seq of the oldest event still held. */
  get start(): number {
    return Math.max(0, this.nextSeq - this.capacity);
  }

  get next(): number {
    return this.nextSeq;
  }

  emit(fields: { type: string } & Record<string, unknown>): WorkspaceEvent {
    const event = { seq_id: this.nextSeq, ...fields } as WorkspaceEvent;
    this.ring[this.nextSeq % this.capacity] = event;
    this.texts[this.nextSeq % this.capacity] = undefined;
    this.nextSeq++;
    for (const s of this.subscribers) s(event);
    return event;
  }

  /** An event's JSON; for one the ring holds, serialized once and kept while it is held. */
  json(event: WorkspaceEvent): string {
    const at = event.seq_id % this.capacity;
    if (this.ring[at] !== event) return JSON.stringify(event);
    return (this.texts[at] ??= JSON.stringify(event));
  }

  /** Events [from, from + limit) still held; a notice when part of that range is gone. */
  slice(from: number, limit: number): { dropped: DroppedNotice | null; events: WorkspaceEvent[] } {
    const first = Math.max(from, this.start);
    const end = Math.min(this.nextSeq, from + limit);
    const dropped = from < this.start ? { type: 'dropped' as const, from_seq: from, to_seq: Math.min(this.start, end) - 1, ring_start: this.start } : null;
    const events: WorkspaceEvent[] = [];
    for (let seq = first; seq < end; seq++) events.push(this.ring[seq % this.capacity]!);
    return { dropped, events };
  }

  /** Replays from `since` (null: nothing), then delivers every later event; returns the unsubscribe. */
  subscribe(since: number | null, deliver: Subscriber, onDropped: (notice: DroppedNotice) => void): () => void {
    if (since !== null && since < this.nextSeq) {
      const { dropped, events } = this.slice(since, this.nextSeq - since);
      if (dropped) onDropped(dropped);
      for (const e of events) deliver(e);
    }
    this.subscribers.add(deliver);
    return () => this.subscribers.delete(deliver);
  }
}
