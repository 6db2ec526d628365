/**
 * Node records for placement by image (cluster/gateway/imagePlacement.ts) without a cluster: what a
 * node publishes of its images (node/imageSummary.ts), made from a few facts.
 */
import type { NodeRecord } from '../../src/cluster/clusterStore';
import type { ImageOnNode, NodeImages } from '../../src/cluster/node/imageSummary';
import { bloomOf } from '../../src/common/bloomFilter';

export interface NodeSpec {
  top?: Array<Partial<ImageOnNode> & { image: string }>;
  others?: string[];
  room?: number;
  health?: NodeRecord['health'];
  onDemand?: boolean;
  pools?: NodeRecord['pools'];
}

export function node(id: string, spec: NodeSpec = {}): NodeRecord {
  const top: ImageOnNode[] = (spec.top ?? []).map((t) => ({ warm: 0, leased: 0, containers: 0, held: true, uses: 1, ...t }));
  const images: NodeImages = {
    on_demand: spec.onDemand ?? true,
    held: top.length + (spec.others?.length ?? 0),
    pulls_in_flight: 0,
    disk_used_bytes: 0,
    disk_budget_bytes: 1,
    evictions: 0,
    room: { containers_free: spec.room ?? 4, sessions_per_container: 2, max_containers_per_image: 4 },
    top,
    others: spec.others && spec.others.length > 0 ? bloomOf(spec.others) : null,
  };
  const pools = spec.pools ?? { default: { total: 2, available: 2, in_use: 0, cleaning: 0, broken: 0, waiting: 0 } };
  return { node_id: id, incarnation: 'i', address: `http://${id}`, health: spec.health ?? 'healthy', pools, healthy_containers: 1, unhealthy_containers: 0, heartbeat_at_ms: 0, images };
}
