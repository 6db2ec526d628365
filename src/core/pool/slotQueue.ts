/**
 * Free slots and the acquires waiting for them (slotDemands.ts: one FIFO for single and group
 * acquires, and its fairness rule). A new acquire takes free slots only when nobody is queued
 * before it.
 */
import type { Slot } from './slot';
import { SlotDemands, fits, leasable } from './slotDemands';
import { AbortedError } from '../../common/errors';

export class SlotQueue {
  private readonly available: Slot[] = [];
  private readonly demands = new SlotDemands((slot) => this.offer(slot));

  get waiting(): number {
    return this.demands.length;
  }

  /** A free slot now, or the oldest waiter's turn before `deadline` (epoch ms). */
  async take(signal: AbortSignal | undefined, deadline: number, timeoutError: () => Error): Promise<Slot> {
    const slot = this.demands.length > 0 ? null : this.takeAvailable([], false);
    if (slot) return slot;
    const [got] = await this.demands.wait(1, false, [], Math.max(0, deadline - Date.now()), signal, timeoutError, () => new AbortedError('acquire'));
    return got;
  }

  /** `n` slots (on distinct containers with `spread`), all at once, before `deadline`. */
  async takeGroup(n: number, spread: boolean, signal: AbortSignal | undefined, deadline: number, timeoutError: () => Error): Promise<Slot[]> {
    const got: Slot[] = [];
    if (this.demands.length === 0) {
      for (let slot = this.takeAvailable(got, spread); slot; slot = got.length < n ? this.takeAvailable(got, spread) : null) got.push(slot);
      if (got.length === n) return got;
    }
    return this.demands.wait(n, spread, got, Math.max(0, deadline - Date.now()), signal, timeoutError, () => new AbortedError('acquire_group'));
  }

  /** A slot became AVAILABLE: the oldest waiter that can use it gets it, or it joins the free list. */
  offer(slot: Slot): void {
    if (!this.demands.serve(slot)) this.available.push(slot);
  }

  rejectAll(err: Error): void {
    this.demands.rejectAll(err);
  }

  /** The first free slot that can join `got`; stale entries (leased or broken since) are dropped. */
  private takeAvailable(got: readonly Slot[], spread: boolean): Slot | null {
    for (let i = 0; i < this.available.length; i++) {
      const slot = this.available[i];
      if (!leasable(slot)) {
        this.available.splice(i--, 1);
        continue;
      }
      if (!fits(got, spread, slot)) continue;
      this.available.splice(i, 1);
      return slot;
    }
    return null;
  }
}
