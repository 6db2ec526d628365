/**
 * Leases the clients walked away from (never released). Once the broker's idle timeout and one
 * reclaim sweep have passed, each must answer 400 session_not_in_use "reclaimed after being idle".
 * Probed once, when due: any call on a live lease would count as activity and restart its idle clock.
 */
import type { SoakHttp } from './http';
import { NoAnswer } from './http';
import { expectError } from './expect';
import { Tally, Unexpected } from './tally';
import { sleep } from '../lib/stats';

export class ReclaimWatch {
  private readonly pending: { id: string; dueMs: number }[] = [];
  abandoned = 0;
  verified = 0;

  /** `dueAfterMs`: idle timeout + the sweep interval + slack for a loaded machine. */
  constructor(
    private readonly http: SoakHttp,
    private readonly tally: Tally,
    private readonly dueAfterMs: number,
  ) {}

  add(id: string): void {
    this.abandoned++;
    this.pending.push({ id, dueMs: Date.now() + this.dueAfterMs });
  }

  get waiting(): number {
    return this.pending.length;
  }

  /** Probes every lease that is due; the rest wait (they were added in due order). */
  async probeDue(): Promise<void> {
    const now = Date.now();
    let due = 0;
    while (due < this.pending.length && this.pending[due].dueMs <= now) due++;
    const batch = this.pending.splice(0, due);
    await Promise.all(batch.map((p) => this.probe(p.id)));
  }

  /** Until every abandoned lease was probed (bounded by the last one's due time). */
  async probeAll(): Promise<void> {
    while (this.pending.length > 0) {
      await this.probeDue();
      if (this.pending.length > 0) await sleep(Math.max(50, this.pending[0].dueMs - Date.now()));
    }
  }

  private async probe(id: string): Promise<void> {
    try {
      const a = await this.http.post(`/session/${id}/execute`, { command: 'echo still-mine', timeout: 5 });
      expectError(a, 'abandoned lease after the idle timeout', 400, 'session_not_in_use', /reclaimed after being idle/);
      this.verified++;
    } catch (err) {
      if (err instanceof Unexpected) this.tally.error(err.kind, `lease ${id}: ${err.message}`);
      else if (err instanceof NoAnswer && !err.aborted) this.tally.error(`reclaim probe: ${err.message}`, id);
    }
  }
}
