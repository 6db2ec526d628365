import type { ContainerRef } from '../../../core/ports/backend';
import { BackendError } from '../../../common/errors';

/**
 * Every container this backend made and has not removed yet, and the starts and connects still on
 * their way. The pool removes the containers it knows at close, but a start or a connect can still
 * be running then (a replacement begun just before, a create slowed by a busy engine): its container
 * would come up after the pool's removals and outlive the broker. The backend's close waits for those
 * (`settle`), then removes whatever is still in the ledger; a start that ends after close is removed
 * at once (`keepOrRemove`).
 */
export class ContainerLedger {
  private readonly made = new Map<string, ContainerRef>();
  private readonly running = new Set<Promise<unknown>>();
  private closed = false;

  /** Runs a start or a connect so that close can wait for it. */
  track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    const done = (): void => void this.running.delete(work);
    work.then(done, done);
    return work;
  }

  /** A container now exists: false once the backend is closing. */
  private admit(ref: ContainerRef): boolean {
    this.made.set(ref.id, ref);
    return !this.closed;
  }


  removed(id: string): void {
    this.made.delete(id);
  }

  /** Closing: no start is admitted from now on; resolves when the running ones ended, or after `boundMs`. */
  async settle(boundMs: number): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs).unref()));
    await Promise.race([Promise.allSettled([...this.running]), bound]);
    clearTimeout(timer);
  }

  /** The containers still to remove at close. */
  left(): ContainerRef[] {
    return [...this.made.values()];
  }

  /** After a start (`started`) or a connect: while closing, the container is removed and the caller fails. */
  async keepOrRemove(ref: ContainerRef, step: 'started' | 'connected', remove: (ref: ContainerRef) => Promise<void>): Promise<void> {
    if (step === 'started' ? this.admit(ref) : !this.closed) return;
    await remove(ref).catch(() => undefined);
    throw new BackendError(`container ${ref.name} came up while the broker was closing: removed`);
  }
}
