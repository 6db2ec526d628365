/**
 * What a node publishes of its images in its cluster record (docs/images.md, On a cluster): the
 * most used ones in full (warm, leased, containers), the rest of those it holds as a Bloom filter,
 * and its disk against the budget. Kept to a few KiB however many images a node holds, so that a
 * gateway can place an acquire for an image where it is warm, else where it is held.
 */
import type { ImagesReport } from '../../core/images/imageViews';
import type { ImageRoom } from '../../core/images/imagePools';
import { bloomMayHave, bloomOf, type BloomFilter } from '../../common/bloomFilter';

export interface ImageOnNode {
  image: string;
  /** Free sessions of its pool now (0: no pool, or all leased). */
  warm: number;
  leased: number;
  containers: number;
  /** Held on the node's disk (false: being pulled). */
  held: boolean;
  uses: number;
}

export interface NodeImages {
  /** Whether this node pulls images on demand at all. */
  on_demand: boolean;
  held: number;
  pulls_in_flight: number;
  disk_used_bytes: number;
  disk_budget_bytes: number;
  /** Images removed for room since the node started. */
  evictions: number;
  /** Containers a new image's demand could start (idle pools counted as free), and one pool's limits. */
  room: ImageRoom;
  /** The images with a pool, then the most used, up to BROKER_CLUSTER_IMAGES_TOP. */
  top: ImageOnNode[];
  /** The held images not in `top`; null when there are none. */
  others: BloomFilter | null;
}

export function imageSummary(report: ImagesReport, topCount: number): NodeImages {
  const ranked = report.images
    .filter((v) => v.state !== 'failed')
    .sort((a, b) => Number(b.containers > 0) - Number(a.containers > 0) || b.uses - a.uses || a.image.localeCompare(b.image));
  const top = ranked.slice(0, topCount);
  const rest = ranked.slice(topCount).filter((v) => v.state === 'held').map((v) => v.image);
  return {
    on_demand: report.on_demand,
    held: report.images_held,
    pulls_in_flight: report.pulls_in_flight,
    disk_used_bytes: report.disk_used_bytes,
    disk_budget_bytes: report.disk_budget_bytes,
    evictions: report.evictions,
    room: report.room,
    top: top.map((v) => ({ image: v.image, warm: v.warm_sessions, leased: v.leased_sessions, containers: v.containers, held: v.state === 'held', uses: v.uses })),
    others: rest.length > 0 ? bloomOf(rest) : null,
  };
}

/** What a node's record says of `image` (canonical): its entry among the top ones, else whether it may hold it. */
export function imageOnNode(images: NodeImages | undefined, image: string): { entry: ImageOnNode | null; mayHold: boolean } {
  const entry = images?.top.find((t) => t.image === image) ?? null;
  if (entry) return { entry, mayHold: entry.held };
  return { entry: null, mayHold: images?.others ? bloomMayHave(images.others, image) : false };
}
