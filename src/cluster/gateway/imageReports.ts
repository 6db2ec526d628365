/**
 * GET /images through a gateway: every node's report merged into one of a node's shape, so a
 * client reads a cluster as it reads a node, plus where each image is (docs/images.md, On a cluster):
 *
 * - each image once, its counts summed over the nodes (containers, warm, leased and waiting
 *   sessions, uses), its disk the sum of its copies, its pull the bytes of every node pulling it;
 *   its state `held` when a node holds it, else `pulling` when one pulls it, else `failed`; and
 *   `nodes`: each node's own view of it (its state, pull, warm sessions...), by node id;
 * - the totals summed (pulls in flight, disk, evictions, room), images held counted once however
 *   many nodes hold them, and `nodes`: each node's own totals.
 */
import type { ImagesReport, ImageView } from '../../core/images/imageViews';
import type { WarmupState } from '../../core/images/imageWarmups';

export interface NodeReport {
  nodeId: string;
  report: ImagesReport;
}

/** One node's view of one image. */
export type NodeImageView = Omit<ImageView, 'image'> & { node_id: string };

export type ClusterImageView = ImageView & { nodes: NodeImageView[] };

export type NodeTotals = Omit<ImagesReport, 'images'> & { node_id: string };

export type ClusterImagesReport = Omit<ImagesReport, 'images'> & { images: ClusterImageView[]; nodes: NodeTotals[] };

/** A warm-up's state over its nodes: the least advanced one (a failure first: someone must look). */
const WARMUP_ORDER: readonly WarmupState[] = ['failed', 'pulling', 'starting', 'warm'];

function mergeImage(image: string, views: readonly NodeImageView[]): ClusterImageView {
  const sum = (f: (v: NodeImageView) => number): number => views.reduce((n, v) => n + f(v), 0);
  const pulling = views.filter((v) => v.pull !== null);
  const holding = views.filter((v) => v.state === 'held');
  const warmups = views.flatMap((v) => (v.warmup ? [v.warmup] : []));
  const lastUses = views.flatMap((v) => (v.last_used_at_ms === null ? [] : [v.last_used_at_ms]));
  return {
    image,
    state: holding.length > 0 ? 'held' : pulling.length > 0 ? 'pulling' : 'failed',
    pull:
      pulling.length === 0
        ? null
        : { bytes_total: sum((v) => v.pull?.bytes_total ?? 0), bytes_done: sum((v) => v.pull?.bytes_done ?? 0), started_at_ms: Math.min(...pulling.map((v) => v.pull!.started_at_ms)) },
    disk_bytes: holding.length === 0 ? null : sum((v) => v.disk_bytes ?? 0),
    containers: sum((v) => v.containers),
    warm_sessions: sum((v) => v.warm_sessions),
    leased_sessions: sum((v) => v.leased_sessions),
    acquires_waiting: sum((v) => v.acquires_waiting),
    uses: sum((v) => v.uses),
    last_used_at_ms: lastUses.length === 0 ? null : Math.max(...lastUses),
    warmup:
      warmups.length === 0
        ? null
        : { sessions: warmups.reduce((n, w) => n + w.sessions, 0), state: WARMUP_ORDER.find((s) => warmups.some((w) => w.state === s)) ?? 'warm' },
    error: views.find((v) => v.error !== null)?.error ?? null,
    nodes: [...views],
  };
}

/** The nodes' reports (in node id order) as one. */
export function mergeImageReports(perNode: readonly NodeReport[]): ClusterImagesReport {
  const byImage = new Map<string, NodeImageView[]>();
  for (const { nodeId, report } of perNode) {
    for (const { image, ...view } of report.images) {
      let views = byImage.get(image);
      if (!views) byImage.set(image, (views = []));
      views.push({ node_id: nodeId, ...view });
    }
  }
  const images = [...byImage].map(([image, views]) => mergeImage(image, views));
  const totals = perNode.map(({ nodeId, report: { images: _images, ...rest } }): NodeTotals => ({ node_id: nodeId, ...rest }));
  const sum = (f: (t: NodeTotals) => number): number => totals.reduce((n, t) => n + f(t), 0);
  // The nodes of a cluster share their settings: one pool's limits are the first pulling node's.
  const limits = (totals.find((t) => t.on_demand) ?? totals[0])?.room;
  return {
    on_demand: totals.some((t) => t.on_demand),
    pulls_in_flight: sum((t) => t.pulls_in_flight),
    images_held: images.filter((i) => i.state === 'held').length,
    disk_used_bytes: sum((t) => t.disk_used_bytes),
    disk_budget_bytes: sum((t) => t.disk_budget_bytes),
    evictions: sum((t) => t.evictions),
    room: {
      containers_free: sum((t) => t.room.containers_free),
      sessions_per_container: limits?.sessions_per_container ?? 0,
      max_containers_per_image: limits?.max_containers_per_image ?? 0,
    },
    images: images.sort((a, b) => b.uses - a.uses || a.image.localeCompare(b.image)),
    nodes: totals,
  };
}
