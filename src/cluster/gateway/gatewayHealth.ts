/**
 * A gateway's /health: the pool API's /health fields summed over the nodes' default pools (so a client that
 * reads a standalone broker's /health reads a cluster's the same), then every pool's totals by
 * state, each node with its address, health, heartbeat age and images (where it pulls them), the
 * acquires by image by the rule that placed them, and whether the store answers.
 * And /cluster/targets: the nodes as a Prometheus HTTP service discovery list.
 */
import type { NodeHealth, PoolCapacity } from '../clusterStore';
import { DEFAULT_POOL } from '../../core/pool/poolRegistry';
import type { Membership } from './membership';
import type { ImageTier } from './imagePlacement';
import type { NodeImages } from '../node/imageSummary';

function emptyCapacity(): PoolCapacity {
  return { total: 0, available: 0, in_use: 0, cleaning: 0, broken: 0, waiting: 0 };
}

function add(into: PoolCapacity, from: PoolCapacity): void {
  into.total += from.total;
  into.available += from.available;
  into.in_use += from.in_use;
  into.cleaning += from.cleaning;
  into.broken += from.broken;
  into.waiting = (into.waiting ?? 0) + (from.waiting ?? 0);
}

/**
 * unhealthy: no node serves (none is registered, or every one is unhealthy); degraded: some node is
 * not healthy, or the store is away (the membership may be stale); healthy otherwise.
 */
export function gatewayHealth(membership: Membership, nowMs = Date.now(), imagePlacements: Record<ImageTier, number> = { warm: 0, held: 0, cold: 0 }) {
  const members = membership.list().sort((a, b) => a.record.node_id.localeCompare(b.record.node_id));
  const pools: Record<string, PoolCapacity> = {};
  let healthyContainers = 0;
  let unhealthyContainers = 0;
  for (const { record } of members) {
    for (const [name, capacity] of Object.entries(record.pools)) add((pools[name] ??= emptyCapacity()), capacity);
    healthyContainers += record.healthy_containers;
    unhealthyContainers += record.unhealthy_containers;
  }
  const serving = members.filter((m) => m.record.health !== 'unhealthy').length;
  let status: NodeHealth = 'healthy';
  if (serving === 0) status = 'unhealthy';
  else if (serving < members.length || members.some((m) => m.record.health === 'degraded') || !membership.connected) status = 'degraded';
  const main = pools[DEFAULT_POOL] ?? emptyCapacity();
  return {
    status,
    total_sessions: main.total,
    available_sessions: main.available,
    in_use_sessions: main.in_use,
    cleaning_sessions: main.cleaning,
    broken_sessions: main.broken,
    healthy_containers: healthyContainers,
    unhealthy_containers: unhealthyContainers,
    role: 'gateway',
    store_connected: membership.connected,
    pools,
    /** Acquires by image since the gateway started, by the rule that placed them (imagePlacement.ts). */
    image_placements: imagePlacements,
    nodes: members.map(({ record, seenAtMs }) => ({
      node_id: record.node_id,
      incarnation: record.incarnation,
      address: record.address,
      health: record.health,
      heartbeat_age_ms: Math.max(0, nowMs - seenAtMs),
      pools: record.pools,
      ...(record.images ? { images: imagesOf(record.images) } : {}),
    })),
  };
}

/** A node's images as its record tells them, its Bloom filter summed up as a count of the images it holds beyond `top`. */
function imagesOf(images: NodeImages) {
  const { others, ...rest } = images;
  return { ...rest, others: others === null ? 0 : Math.max(0, images.held - images.top.filter((t) => t.held).length) };
}

/** Prometheus' http_sd format: one target group per node, labelled with its id. */
export function clusterTargets(membership: Membership): Array<{ targets: string[]; labels: Record<string, string> }> {
  return membership.list().map(({ record }) => {
    const url = new URL(record.address);
    return { targets: [url.host], labels: { node: record.node_id, __scheme__: url.protocol.replace(':', '') } };
  });
}
