/**
 * Free slots and the FIFO of acquires waiting for one. A slot that becomes free goes to the oldest
 * waiter; a new acquire takes a free slot only when nobody is queued before it (fairness).
 */
import type { Slot } from './slot';
import { SessionState } from './states';
import { WaitQueue } from './waitQueue';
import { AbortedError, PoolExhaustedError } from '../common/errors';

export class SlotQueue {
  private readonly available: Slot[] = [];
  private readonly waiters = new WaitQueue<Slot>();

  /** `acquireTimeoutMs`: what a PoolExhaustedError reports (the waits themselves end at their deadline). */
  constructor(private readonly acquireTimeoutMs: number) {}

  get waiting(): number {
    return this.waiters.length;
  }

  /** A free slot now, or the oldest waiter's turn before `deadline` (epoch ms). */
  async take(signal: AbortSignal | undefined, deadline: number): Promise<Slot> {
    return this.takeAvailable() ?? (await this.waitForSlot(signal, deadline));
  }

  /** A slot became AVAILABLE: the oldest waiter gets it, or it joins the free list. */
  offer(slot: Slot): void {
    if (!this.waiters.serve(slot)) this.available.push(slot);
  }

  rejectAll(err: Error): void {
    this.waiters.rejectAll(err);
  }

  private takeAvailable(): Slot | null {
    if (this.waiters.length > 0) return null; // keep FIFO fairness: queued clients go first
    while (this.available.length) {
      const slot = this.available.shift()!;
      if (slot.state === SessionState.AVAILABLE && !slot.lease) return slot;
    }
    return null;
  }

  private waitForSlot(signal: AbortSignal | undefined, deadline: number): Promise<Slot> {
    return this.waiters.wait(
      Math.max(0, deadline - Date.now()),
      signal,
      () => new PoolExhaustedError(this.acquireTimeoutMs),
      () => new AbortedError('acquire'),
    );
  }
}
