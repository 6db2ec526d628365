/**
 * Where an acquire goes: the best of 3 nodes drawn at random (the "power of choices" E2B's API uses).
 * Why not the single best node: the facts are up to a heartbeat old and every gateway places at
 * once, so all of them would pile on the same node until the next heartbeat; three random draws
 * spread the acquires and still steer clear of full nodes, at a cost that does not grow with the
 * cluster.
 *
 * A node's free sessions are its record's available ones less the acquires already waiting in its
 * queue (they take the next ones it frees) and less this gateway's own acquires the record does not
 * count yet (the part of the staleness it knows of). A node with a session free that way always
 * wins over one without, whatever their sizes: an acquire is never sent to wait behind a queue
 * while a node has a session for it. When no node has one, the acquire waits in the queue that
 * empties soonest: the fewest acquires ahead of it per session the node turns over.
 */
import type { NodeRecord } from '../clusterStore';

export const PLACEMENT_CHOICES = 3;

export interface PlacementInput {
  nodes: readonly NodeRecord[];
  pool: string;
  /** Nodes already tried for this acquire. */
  exclude: ReadonlySet<string>;
  /** This gateway's acquires to a node that its record does not count yet. */
  inFlight(nodeId: string): number;
  random?: () => number;
}

export interface Placement {
  node: NodeRecord;
  /** Whether the facts say it has a session free now (else the acquire waits in its queue). */
  free: boolean;
}

/** Sessions of `pool` free on `node` for one more acquire: available, less the acquires ahead (may be negative: a queue). */
export function freeSessions(node: NodeRecord, pool: string, inFlight: number): number {
  const capacity = node.pools[pool];
  return capacity.available - (capacity.waiting ?? 0) - inFlight;
}

/** The nodes that serve `pool`, are not unhealthy and were not tried; null when there is none. */
export function placeAcquire({ nodes, pool, exclude, inFlight, random = Math.random }: PlacementInput): Placement | null {
  const eligible = nodes.filter((n) => !exclude.has(n.node_id) && n.health !== 'unhealthy' && n.pools[pool] !== undefined);
  if (eligible.length === 0) return null;
  const free = (n: NodeRecord): number => freeSessions(n, pool, inFlight(n.node_id));
  const withFree = eligible.filter((n) => free(n) > 0);
  // None free: the shortest queue for the sessions that serve it (ahead of it, per session; higher is better).
  const score = withFree.length > 0 ? free : (n: NodeRecord) => (free(n) - 1) / Math.max(1, n.pools[pool].total);
  let best: NodeRecord | null = null;
  for (const n of sample(withFree.length > 0 ? withFree : eligible, PLACEMENT_CHOICES, random)) if (best === null || score(n) > score(best)) best = n;
  return { node: best!, free: withFree.length > 0 };
}

/** Up to `k` distinct items drawn at random (a partial Fisher-Yates shuffle of a copy). */
function sample<T>(items: readonly T[], k: number, random: () => number): T[] {
  const copy = [...items];
  const n = Math.min(k, copy.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(random() * (copy.length - i));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, n);
}
