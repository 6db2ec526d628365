/**
 * Where an acquire goes: the best of 3 nodes drawn at random (the "power of choices" E2B's API uses),
 * the best being the one with the most free sessions of the pool asked for. Why not the single best
 * node: the facts are up to a heartbeat old and every gateway places at once, so all of them would
 * pile on the same node until the next heartbeat; three random draws spread the acquires and still
 * steer clear of full nodes, at a cost that does not grow with the cluster. A gateway subtracts its
 * own acquires in flight to each node, the part of the staleness it knows of.
 */
import type { NodeRecord } from '../clusterStore';

export const PLACEMENT_CHOICES = 3;

export interface PlacementInput {
  nodes: readonly NodeRecord[];
  pool: string;
  /** Nodes already tried for this acquire. */
  exclude: ReadonlySet<string>;
  /** This gateway's acquires in flight to a node. */
  inFlight(nodeId: string): number;
  random?: () => number;
}

export interface Placement {
  node: NodeRecord;
  /** Whether the facts say it has a session free now (else the acquire waits in its queue). */
  free: boolean;
}

/** The nodes that serve `pool`, are not unhealthy and were not tried; null when there is none. */
export function placeAcquire({ nodes, pool, exclude, inFlight, random = Math.random }: PlacementInput): Placement | null {
  const eligible = nodes.filter((n) => !exclude.has(n.node_id) && n.health !== 'unhealthy' && n.pools[pool] !== undefined);
  if (eligible.length === 0) return null;
  const free = (n: NodeRecord): number => n.pools[pool].available - inFlight(n.node_id);
  const withFree = eligible.filter((n) => free(n) > 0);
  // None free: the acquire waits in a queue; the node with the most sessions turns over soonest.
  const drawFrom = withFree.length > 0 ? withFree : eligible;
  const score = withFree.length > 0 ? free : (n: NodeRecord) => n.pools[pool].total - inFlight(n.node_id);
  let best: NodeRecord | null = null;
  for (const n of sample(drawFrom, PLACEMENT_CHOICES, random)) if (best === null || score(n) > score(best)) best = n;
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
