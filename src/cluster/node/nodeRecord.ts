/** What a node publishes: its pools' sessions by state, the acquires waiting for them, and its health, as its own /health sees them. */
import type { PoolRegistry } from '../../core/pool/poolRegistry';
import { SessionState } from '../../core/pool/states';
import { brokerHealth } from '../../api/pool/healthRoutes';
import type { NodeRecord, PoolCapacity } from '../clusterStore';
import type { IdOwner } from '../clusterIds';
import type { ImagesReport } from '../../core/images/imageViews';
import { imageSummary } from './imageSummary';
import { canonicalImage } from '../../core/images/imageRef';
import type { ImagePool } from '../../core/images/imagePool';
import { imageKey } from './nodeHeartbeat';

/** The node's images for its record: its report, and how many of them it names in full. */
export interface RecordImages {
  report(): ImagesReport;
  top: number;
}

export function nodeRecord(pools: PoolRegistry, owner: IdOwner, address: string, nowMs = Date.now(), images?: RecordImages): NodeRecord {
  const byPool: Record<string, PoolCapacity> = {};
  let healthy = 0;
  let unhealthy = 0;
  for (const entry of pools.entries) {
    const { counts, healthyContainers, unhealthyContainers } = entry.pool.health();
    // A closing pool takes no acquire: it offers none.
    const available = entry.pool.isClosing ? 0 : counts.available;
    const image = canonicalImage(entry.image);
    byPool[entry.name] = { total: counts.total, available, in_use: counts.in_use, cleaning: counts.cleaning, broken: counts.broken, waiting: entry.pool.waiting, ...(image ? { image } : {}) };
    healthy += healthyContainers;
    unhealthy += unhealthyContainers;
  }
  const imagesReport = images?.report();
  return {
    node_id: owner.nodeId,
    incarnation: owner.incarnation,
    address,
    health: brokerHealth(pools).status,
    pools: byPool,
    healthy_containers: healthy,
    unhealthy_containers: unhealthy,
    heartbeat_at_ms: nowMs,
    // Only a node that pulls images says so: other records stay as they were.
    ...(imagesReport?.on_demand ? { images: imageSummary(imagesReport, images!.top) } : {}),
  };
}

/** What a node offers per pool (a closing pool: none) and per image pool, read from the pools' counts alone: the heartbeat's look between beats. */
export function availableByPool(pools: PoolRegistry, imagePools: readonly ImagePool[] = []): Record<string, number> {
  const out: Record<string, number> = {};
  for (const entry of pools.entries) out[entry.name] = entry.pool.isClosing ? 0 : entry.pool.states.count(SessionState.AVAILABLE);
  for (const entry of imagePools) out[imageKey(entry.image)] = entry.closed ? 0 : entry.warmSessions;
  return out;
}
