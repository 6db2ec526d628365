/**
 * A node's heartbeat: every interval it writes its record (capacity and health) and renews its
 * lease. A beat the store misses is logged once per outage and tried again at the next interval;
 * the lease outlives a few missed beats (TTL >= 2 intervals), and a lease the store dropped meanwhile
 * is granted anew, so the node rejoins by itself when the store returns.
 */
import type { NodeRecord, NodeRegistration } from '../clusterStore';
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';

export class NodeHeartbeat {
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private failing = false;
  private beating: Promise<void> = Promise.resolve();

  constructor(
    private readonly registration: NodeRegistration,
    private readonly record: () => NodeRecord,
    private readonly intervalMs: number,
  ) {}

  /** The first beat, awaited: a node that cannot register does not start quietly. */
  async start(): Promise<void> {
    await this.registration.publish(this.record());
    this.schedule();
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.beating = this.beat().finally(() => this.schedule());
    }, this.intervalMs);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    try {
      await this.registration.publish(this.record());
      if (this.failing) logger.info('cluster store answers again: node registration refreshed');
      this.failing = false;
    } catch (err) {
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
