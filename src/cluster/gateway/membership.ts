/**
 * A gateway's view of the cluster, fed by the store's watch: every node's last record and when this
 * gateway saw it. Calls read it, never the store: routing and placement stay off the store's path,
 * and when the store is away the last membership stands.
 */
import type { MembershipListener, NodeRecord } from '../clusterStore';

export interface Member {
  record: NodeRecord;
  /** When this gateway last saw the node's record change (its clock, epoch ms): the heartbeat's age. */
  seenAtMs: number;
}

export class Membership implements MembershipListener {
  private readonly members = new Map<string, Member>();
  private storeConnected = true;

  private readonly watchers: Array<(record: NodeRecord) => void> = [];

  upsert(record: NodeRecord): void {
    this.members.set(record.node_id, { record, seenAtMs: Date.now() });
    for (const watcher of this.watchers) watcher(record);
  }

  /** `watcher` sees every record as it comes (a node that frees sessions, for the acquires waiting). */
  onRecord(watcher: (record: NodeRecord) => void): void {
    this.watchers.push(watcher);
  }

  remove(nodeId: string): void {
    this.members.delete(nodeId);
  }

  connection(connected: boolean): void {
    this.storeConnected = connected;
  }

  get connected(): boolean {
    return this.storeConnected;
  }

  get(nodeId: string): Member | undefined {
    return this.members.get(nodeId);
  }

  list(): Member[] {
    return [...this.members.values()];
  }

  get size(): number {
    return this.members.size;
  }
}
