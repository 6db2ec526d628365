/**
 * Checks every container periodically through the backend; reports each one that stops answering.
 * A self-rescheduling timer with a `stopped` flag, so a slow check never overlaps the next.
 */
import type { SessionBackend } from '../ports/backend';
import type { ContainerEntry } from './slot';
import { errorMessage } from '../../common/errors';

export class ContainerMonitor {
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
  private soon = false;

  constructor(
    private readonly backend: SessionBackend,
    private readonly containers: readonly ContainerEntry[],
    private readonly intervalMs: number,
    private readonly onFailed: (entry: ContainerEntry, reason: string) => Promise<void>,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Runs a check right away (debounced: at most one extra pass in flight). */
  checkSoon(): void {
    if (this.stopped || this.soon) return;
    this.soon = true;
    setTimeout(() => {
      void this.checkNow().finally(() => (this.soon = false));
    }, 50).unref();
  }

  /** One pass over all containers; exposed so tests and faults can force a check now. */
  async checkNow(): Promise<void> {
    await Promise.all(
      this.containers.map(async (entry) => {
        if (entry.replacing || this.stopped) return;
        if (!entry.ref || !entry.healthy) {
          // Its (re)start failed (engine error, name still taken, ...): nothing else would ever try
          // again, and the pool would stay short of those sessions for good. Retry once per pass.
          await this.onFailed(entry, entry.unhealthyReason ?? 'container is not running');
          return;
        }
        const ref = entry.ref;
        const health = await this.backend.checkContainer(ref).catch((err) => ({ healthy: false, reason: errorMessage(err) }));
        // checkSoon() and the periodic pass can overlap: if the other one already began replacing
        // this container, a second replacement would race it for the same name and slots.
        if (entry.ref !== ref || entry.replacing) return;
        if (!health.healthy && !this.stopped) await this.onFailed(entry, health.reason ?? 'unhealthy');
      }),
    );
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.checkNow().finally(() => this.schedule());
    }, this.intervalMs);
    this.timer.unref();
  }
}
