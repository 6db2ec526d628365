/**
 * A gateway's acquires that a node's published record does not count yet: those sent to it after
 * the record this gateway last saw (still in flight), and those it granted after that record
 * (records are up to a heartbeat old). Placement subtracts them from the record's free sessions, so
 * a burst of acquires through one gateway does not pile on the node that looked free a second ago.
 * An acquire sent before the record and still waiting is not counted: the record's own `waiting`
 * counts it already.
 */
export class UnseenAcquires {
  /** Per node, when (this gateway's clock, epoch ms) each acquire in flight was sent, oldest first. */
  private readonly pending = new Map<string, number[]>();
  /** Per node, when each acquire was granted, oldest first. */
  private readonly granted = new Map<string, number[]>();

  begin(nodeId: string): void {
    push(this.pending, nodeId, Date.now());
  }

  end(nodeId: string, grantedSession: boolean): void {
    // Which one ended is not known: the oldest goes, the likeliest to be in the record already.
    const times = this.pending.get(nodeId);
    times?.shift();
    if (times?.length === 0) this.pending.delete(nodeId);
    if (grantedSession) push(this.granted, nodeId, Date.now());
  }

  /** Acquires `nodeId`'s record seen at `recordSeenAtMs` does not count. */
  count(nodeId: string, recordSeenAtMs: number): number {
    // Grants the record already counts are forgotten.
    const granted = this.granted.get(nodeId);
    if (granted) {
      while (granted.length > 0 && granted[0] <= recordSeenAtMs) granted.shift();
      if (granted.length === 0) this.granted.delete(nodeId);
    }
    return newerThan(this.pending.get(nodeId), recordSeenAtMs) + (granted?.length ?? 0);
  }
}

function push(into: Map<string, number[]>, nodeId: string, atMs: number): void {
  const times = into.get(nodeId);
  if (times) times.push(atMs);
  else into.set(nodeId, [atMs]);
}

/** How many of the ascending `times` are after `sinceMs`. */
function newerThan(times: readonly number[] | undefined, sinceMs: number): number {
  if (!times) return 0;
  let i = times.length;
  while (i > 0 && times[i - 1] > sinceMs) i--;
  return times.length - i;
}
