/**
 * The FIFO of acquires waiting for sessions: single acquires (one slot) and group acquires (n slots,
 * all or none, maybe on distinct containers) in ONE queue, so neither kind can starve the other.
 *
 * The rule: a slot that becomes free goes to the oldest waiter that can use it. A group at the head
 * keeps each slot it is given (reserved: still AVAILABLE, leased to nobody) until it has all n, and
 * the waiters behind it wait meanwhile: a stream of single acquires cannot starve a group, and a
 * single waits behind at most the groups queued before it. The one skip: a group that asked for
 * `spread` cannot use a second slot of a container it already holds; that slot goes to the next
 * waiter. A group that times out or whose client left gives its reserved slots back (to the next
 * waiters first). A waiter that times out or whose client went away leaves at once (it is skipped
 * and no longer counted), so a slot is never handed to someone who is gone.
 *
 * Not generic-pool, which was tried behind the same state machine: its pending acquires cannot be
 * cancelled (a disconnected client keeps its place, ~3.4 KB and ~5.5 us of every later hand-off each,
 * until its turn or the acquire timeout), its model has no CLEANING or BROKEN with backoff, nor groups,
 * and its dispatch added 46-100 us to an acquire's p50 side by side with this queue (docs/architecture.md, "Why the wait queue is hand-written").
 */
import type { Slot } from './slot';
import { SessionState } from './states';

interface Demand {
  n: number;
  spread: boolean;
  got: Slot[];
  settled: boolean;
  resolve: (slots: Slot[]) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
  cleanup: () => void;
}

/** A slot that can still be leased (one that broke while reserved is rebuilt and offered again). */
export function leasable(slot: Slot): boolean {
  return slot.state === SessionState.AVAILABLE && !slot.lease;
}

/** Whether a demand holding `got` can take `slot` too. */
export function fits(got: readonly Slot[], spread: boolean, slot: Slot): boolean {
  for (const held of got) if (held === slot || (spread && held.container === slot.container)) return false;
  return true;
}

export class SlotDemands {
  private queue: Demand[] = [];
  private head = 0;
  private live = 0;

  /** `giveBack`: slots a demand had reserved when it left (timed out, aborted, rejected). */
  constructor(private readonly giveBack: (slot: Slot) => void) {}

  /** Waiting acquires (a group counts once). */
  get length(): number {
    return this.live;
  }

  /** Waits for `n - got.length` more slots; `got` are slots already reserved for this demand. */
  wait(n: number, spread: boolean, got: Slot[], timeoutMs: number, signal: AbortSignal | undefined, timeoutError: () => Error, abortError: () => Error): Promise<Slot[]> {
    if (signal?.aborted) {
      for (const slot of got) this.giveBack(slot);
      return Promise.reject(abortError());
    }
    return new Promise<Slot[]>((resolve, reject) => {
      const demand: Demand = {
        n,
        spread,
        got,
        settled: false,
        resolve,
        reject,
        // The error is made once the demand has left: a 503's queue length does not count its own acquire.
        timer: setTimeout(() => this.drop(demand, timeoutError), timeoutMs),
        cleanup: () => undefined,
      };
      if (signal) {
        const onAbort = (): void => this.drop(demand, abortError);
        signal.addEventListener('abort', onAbort, { once: true });
        demand.cleanup = () => signal.removeEventListener('abort', onAbort);
      }
      this.queue.push(demand);
      this.live++;
    });
  }

  /** Gives `slot` to the oldest waiter that can use it. False when none can (nobody waits, say). */
  serve(slot: Slot): boolean {
    for (let i = this.head; i < this.queue.length; i++) {
      const demand = this.queue[i];
      if (demand.settled) {
        if (i === this.head) this.head++;
        continue;
      }
      if (!fits(demand.got, demand.spread, slot)) continue;
      demand.got.push(slot);
      if (demand.got.length >= demand.n) this.complete(demand);
      this.compact();
      return true;
    }
    this.compact();
    return false;
  }

  rejectAll(err: Error): void {
    const pending = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    for (const demand of pending) this.drop(demand, () => err);
  }

  /** All n reserved: handed over, unless one broke meanwhile (it is dropped and the demand waits on). */
  private complete(demand: Demand): void {
    demand.got = demand.got.filter(leasable);
    if (demand.got.length < demand.n) return;
    this.settle(demand);
    demand.resolve(demand.got);
  }

  private drop(demand: Demand, error: () => Error): void {
    if (demand.settled) return;
    this.settle(demand);
    this.compact(); // a queue nobody serves must not grow with the waiters that left
    const reserved = demand.got;
    demand.got = [];
    demand.reject(error());
    for (const slot of reserved) if (leasable(slot)) this.giveBack(slot);
  }

  private settle(demand: Demand): void {
    demand.settled = true;
    this.live--;
    clearTimeout(demand.timer);
    demand.cleanup();
  }

  /** Forgets settled demands at the front, and all of them once they outnumber the live ones. */
  private compact(): void {
    while (this.head < this.queue.length && this.queue[this.head].settled) this.head++;
    const entries = this.queue.length - this.head;
    if (this.head > 1024 || (entries > 1024 && this.live * 2 < entries)) {
      this.queue = this.queue.slice(this.head).filter((d) => !d.settled);
      this.head = 0;
    }
  }
}
