/**
 * What the node tells of its images (GET /images, /health, /metrics, the dashboard, its cluster
 * record): each image it holds, pulls or warms, with its pull's progress, its disk size, its pool's
 * containers and sessions, its last use, and the last failure of its pull or warm-up.
 */
import type { ImagePools, ImageRoom } from './imagePools';
import type { ImagePulls } from './imagePulls';
import type { ImageWarmups, WarmupView } from './imageWarmups';

export interface ImageView {
  image: string;
  state: 'pulling' | 'held' | 'failed';
  pull: { bytes_total: number; bytes_done: number; started_at_ms: number } | null;
  /** Its layers' bytes, shared ones included; null while it is not held. */
  disk_bytes: number | null;
  containers: number;
  warm_sessions: number;
  leased_sessions: number;
  /** Acquires on their way to a session of it (waiting for its pull, a container or a free session). */
  acquires_waiting: number;
  /** Sessions it leased since it was held (how the most used images are told). */
  uses: number;
  last_used_at_ms: number | null;
  warmup: Pick<WarmupView, 'sessions' | 'state'> | null;
  error: { code: string; detail: string } | null;
}

export interface ImagesReport {
  on_demand: boolean;
  pulls_in_flight: number;
  images_held: number;
  disk_used_bytes: number;
  disk_budget_bytes: number;
  evictions: number;
  /** Room for image pools in the node budget (idle pools counted as free), and one pool's limits. */
  room: ImageRoom;
  images: ImageView[];
}

export function imagesReport(pools: ImagePools, pulls: ImagePulls | null, warmups: ImageWarmups | null, evictions: number): ImagesReport {
  const views = new Map<string, ImageView>();
  const view = (image: string): ImageView => {
    let v = views.get(image);
    if (!v) {
      v = { image, state: 'held', pull: null, disk_bytes: null, containers: 0, warm_sessions: 0, leased_sessions: 0, acquires_waiting: 0, uses: 0, last_used_at_ms: null, warmup: null, error: null };
      views.set(image, v);
    }
    return v;
  };
  for (const f of pulls?.recentFailures() ?? []) Object.assign(view(f.image), { state: 'failed', error: { code: f.code, detail: f.detail } });
  for (const e of pulls?.disk.entries() ?? []) Object.assign(view(e.ref), { state: 'held', error: null, disk_bytes: e.bytes, uses: e.uses, last_used_at_ms: e.lastUsedMs || null });
  for (const p of pulls?.pulling() ?? []) Object.assign(view(p.image), { state: 'pulling', pull: { bytes_total: p.bytesTotal, bytes_done: p.bytesDone, started_at_ms: p.startedAtMs } });
  for (const p of pools.live) {
    const v = view(p.image);
    v.containers = p.containers;
    v.warm_sessions = p.warmSessions;
    v.leased_sessions = p.leasedSessions;
    v.uses = Math.max(v.uses, p.uses);
  }
  for (const [image, n] of pools.pendingByImage()) view(image).acquires_waiting = n;
  for (const w of warmups?.list() ?? []) {
    const v = view(w.image);
    v.warmup = { sessions: w.sessions, state: w.state };
    if (w.error && v.state !== 'held') Object.assign(v, { state: 'failed', error: w.error });
  }
  return {
    on_demand: pools.onDemand,
    pulls_in_flight: pulls?.inFlight ?? 0,
    images_held: pulls?.disk.size ?? 0,
    disk_used_bytes: pulls?.disk.usedBytes() ?? 0,
    disk_budget_bytes: pulls?.disk.budgetBytes ?? 0,
    evictions,
    room: pools.room(),
    images: [...views.values()].sort((a, b) => b.uses - a.uses || a.image.localeCompare(b.image)),
  };
}
