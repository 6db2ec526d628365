/**
 * Images on demand on /metrics (docs/images.md, Operators): pulls (in flight, by result, bytes,
 * durations), the disk (images held, bytes used against the budget), evictions, acquires by image
 * by what they cost, and each live image pool's warm sessions. Counters count as events come; the
 * gauges are read from the node's report at scrape time.
 */
import client, { type Registry } from 'prom-client';
import type { PullEvents } from '../core/images/imagePulls';
import type { ImageCost, ImageEvents } from '../core/images/imagePools';
import type { ImagesReport } from '../core/images/imageViews';

const PULL_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export class ImageMetrics implements PullEvents, ImageEvents {
  /** Images removed for room since start (GET /images and /health say it too). */
  evictions = 0;
  private report: (() => ImagesReport) | null = null;
  private readonly pulls: client.Counter<'result'>;
  private readonly pullBytes: client.Counter;
  private readonly pullDuration: client.Histogram<'result'>;
  private readonly evictedCount: client.Counter;
  private readonly evictedBytes: client.Counter;
  private readonly acquires: client.Counter<'kind'>;
  private readonly acquireWait: client.Histogram<'kind'>;

  constructor(registry: Registry) {
    const registers = [registry];
    const report = (): ImagesReport | null => this.report?.() ?? null;
    this.pulls = new client.Counter({ name: 'broker_image_pulls_total', help: 'Image pulls ended, by result (ok, failed)', labelNames: ['result'], registers });
    for (const result of ['ok', 'failed']) this.pulls.inc({ result }, 0);
    this.pullBytes = new client.Counter({ name: 'broker_image_pull_bytes_total', help: 'Bytes image pulls fetched (as the registry sizes them)', registers });
    this.pullDuration = new client.Histogram({ name: 'broker_image_pull_duration_seconds', help: 'Image pull durations, by result', labelNames: ['result'], buckets: PULL_BUCKETS, registers });
    this.evictedCount = new client.Counter({ name: 'broker_image_evictions_total', help: 'Images removed to keep the disk budget (least recently used, unused)', registers });
    this.evictedBytes = new client.Counter({ name: 'broker_image_evicted_bytes_total', help: 'Bytes freed by image evictions', registers });
    this.acquires = new client.Counter({ name: 'broker_image_acquires_total', help: 'Acquires by image, by what they cost (warm, started, pulled)', labelNames: ['kind'], registers });
    for (const kind of ['warm', 'started', 'pulled']) this.acquires.inc({ kind }, 0);
    this.acquireWait = new client.Histogram({ name: 'broker_image_acquire_wait_seconds', help: 'Acquires by image: their whole wait, by what they cost', labelNames: ['kind'], buckets: [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers });
    const gauge = (name: string, help: string, read: (r: ImagesReport) => number): void => {
      new client.Gauge({
        name,
        help,
        registers,
        collect() {
          const r = report();
          this.set(r ? read(r) : 0);
        },
      });
    };
    gauge('broker_image_pulls_in_flight', 'Image pulls running now', (r) => r.pulls_in_flight);
    gauge('broker_images_held', 'Images the node holds (allowed repositories)', (r) => r.images_held);
    gauge('broker_image_disk_bytes', 'Disk the held images take (each layer once)', (r) => r.disk_used_bytes);
    gauge('broker_image_disk_budget_bytes', 'The image disk budget (BROKER_IMAGE_DISK)', (r) => r.disk_budget_bytes);
    new client.Gauge({
      name: 'broker_image_warm_sessions',
      help: 'Free sessions of each live image pool (at most the node container budget of series)',
      labelNames: ['image'],
      registers,
      collect() {
        this.reset();
        for (const v of report()?.images ?? []) if (v.containers > 0) this.set({ image: v.image }, v.warm_sessions);
      },
    });
  }

  /** The node's report, read at each scrape. */
  attach(report: () => ImagesReport): void {
    this.report = report;
  }

  pulled(result: 'ok' | 'failed', durationMs: number, bytes: number): void {
    this.pulls.inc({ result });
    this.pullBytes.inc(bytes);
    this.pullDuration.observe({ result }, durationMs / 1000);
  }

  evicted(_ref: string, bytes: number): void {
    this.evictions++;
    this.evictedBytes.inc(bytes);
    this.evictedCount.inc();
  }

  acquired(cost: ImageCost): void {
    this.acquires.inc({ kind: cost.kind });
    this.acquireWait.observe({ kind: cost.kind }, cost.waitMs / 1000);
  }
}
