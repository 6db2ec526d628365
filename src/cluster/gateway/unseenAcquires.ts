/**
 * A gateway's acquires that a node's published record does not count yet: those in flight to it,
 * and those it granted after the record this gateway last saw (records are up to a heartbeat old).
 * Placement subtracts them from the record's free sessions, so a burst of acquires through one
 * gateway does not pile on the node that looked free a second ago.
 */
export class UnseenAcquires {
  private readonly pending = new Map<string, number>();
  /** Per node, when (this gateway's clock, epoch ms) each acquire was granted, oldest first. */
  private readonly granted = new Map<string, number[]>();

  begin(nodeId: string): void {
    this.pending.set(nodeId, (this.pending.get(nodeId) ?? 0) + 1);
  }

  end(nodeId: string, grantedSession: boolean): void {
    const left = (this.pending.get(nodeId) ?? 1) - 1;
    if (left === 0) this.pending.delete(nodeId);
    else this.pending.set(nodeId, left);
    if (!grantedSession) return;
    const times = this.granted.get(nodeId) ?? [];
    times.push(Date.now());
    this.granted.set(nodeId, times);
  }

  /** Acquires `nodeId`'s record seen at `recordSeenAtMs` does not count. */
  count(nodeId: string, recordSeenAtMs: number): number {
    const times = this.granted.get(nodeId);
    let recent = 0;
    if (times) {
      // Grants the record already counts are forgotten.
      while (times.length > 0 && times[0] <= recordSeenAtMs) times.shift();
      if (times.length === 0) this.granted.delete(nodeId);
      recent = times.length;
    }
    return (this.pending.get(nodeId) ?? 0) + recent;
  }
}
