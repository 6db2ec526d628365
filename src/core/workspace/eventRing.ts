/**
 * A workspace's events: the one event log (common/eventLog.ts), numbered by `seq_id` from 0 (so a seq
 * is also the event's absolute index), and a `dropped` notice first when some events asked for are
 * gone.
 */
import { EventLog, type Gap, type Numbered } from '../../common/eventLog';

export type WorkspaceEvent = Numbered<'seq_id', WorkspaceEventFields>;
type WorkspaceEventFields = { type: string } & Record<string, unknown>;

/** Said first when some of the events asked for are gone from the ring. */
export interface DroppedNotice {
  type: 'dropped';
  /** The first and last seq asked for that are gone. */
  from_seq: number;
  to_seq: number;
  /** The oldest seq still in the ring. */
  ring_start: number;
}

const droppedNotice = (gap: Gap): DroppedNotice => ({ type: 'dropped', from_seq: gap.from, to_seq: gap.to, ring_start: gap.oldest });

export class EventRing extends EventLog<'seq_id', WorkspaceEventFields, DroppedNotice> {
  constructor(capacity: number) {
    super({ capacity, key: 'seq_id', first: 0, notice: droppedNotice });
  }
}
