/**
 * A node's heartbeat: every interval it writes its record (capacity and health) and renews its
 * lease, and sooner when a pool that was full (a configured one, or an image's) frees a session. A beat the store misses is logged once per outage and tried again at the next interval;
 * the lease outlives a few missed beats (TTL >= 2 intervals), and a lease the store dropped meanwhile
 * is granted anew, so the node rejoins by itself when the store returns.
 */
import type { NodeRecord, NodeRegistration } from '../clusterStore';
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';

/**
 * How often a node looks, between beats, whether a pool of it went from full to free. Acquires
 * waiting on other nodes are sent a probe here as soon as the gateways see the record
 * (gatewayAcquire.ts), so a session freed is offered within this, not within a whole beat.
 */
const FREED_CHECK_MS = 100;

/** The key of an image pool's free sessions in `available` (beside the configured pools' names). */
export const imageKey = (image: string): string => `image:${image}`;

/**
 * Whether a pool that `before` showed full has a free session now (`available`: sessions free per
 * pool, and per image pool under imageKey). An image counts only when `before` named it among its
 * top images with no warm session: that is what a gateway placed by, and an image the record does
 * not name in full would look freed at every look.
 */
export function freedSince(before: NodeRecord | null, available: Record<string, number>): boolean {
  if (before === null) return false;
  for (const [pool, free] of Object.entries(available)) {
    if (free <= 0) continue;
    if (pool.startsWith('image:')) {
      const image = pool.slice('image:'.length);
      if (before.images?.top.find((t) => t.image === image)?.warm === 0) return true;
    } else if (before.pools[pool]?.available === 0) return true;
  }
  return false;
}

export class NodeHeartbeat {
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private failing = false;
  private beating: Promise<void> = Promise.resolve();
  private published: NodeRecord | null = null;
  private publishedAtMs = 0;

  /**
   * `record`: the whole record, built for a beat; `available`: the sessions free per pool, all a look
   * between beats reads (the record's health walks every pool and container, ten times a second).
   */
  constructor(
    private readonly registration: NodeRegistration,
    private readonly record: () => NodeRecord,
    private readonly intervalMs: number,
    private readonly available: () => Record<string, number>,
  ) {}

  /** The first beat, awaited: a node that cannot register does not start quietly. */
  async start(): Promise<void> {
    const record = this.record();
    await this.registration.publish(record);
    this.took(record);
    this.schedule();
  }

  private took(record: NodeRecord): void {
    this.published = record;
    this.publishedAtMs = Date.now();
  }

  /** The next look: a beat when the interval is up, or sooner when a full pool freed (not while the store is away: then each beat retries). */
  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      const due = Date.now() - this.publishedAtMs >= this.intervalMs;
      this.beating = (due || (!this.failing && freedSince(this.published, this.available())) ? this.beat(this.record()) : Promise.resolve()).finally(() => this.schedule());
    }, Math.min(FREED_CHECK_MS, this.intervalMs));
    this.timer.unref();
  }

  private async beat(record: NodeRecord): Promise<void> {
    try {
      await this.registration.publish(record);
      this.took(record);
      if (this.failing) logger.info('cluster store answers again: node registration refreshed');
      this.failing = false;
    } catch (err) {
      // Tried again when the interval is next up.
      this.publishedAtMs = Date.now();
      if (!this.failing) logger.warn({ err: errorMessage(err) }, 'cluster store did not take the node heartbeat; retrying every beat');
      this.failing = true;
    }
  }
  /** Stops the beats and ends the registration: the gateways see the node leave at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.beating.catch(() => undefined);
    await this.registration.close();
  }
}
