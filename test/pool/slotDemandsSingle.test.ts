/**
 * Needs no backend:
 * @backend any
 */
import { SlotDemands } from '../../src/core/pool/slotDemands';
import { SessionState } from '../../src/core/pool/states';
import type { Slot } from '../../src/core/pool/slot';

/** A leasable slot that stands for `value` (its slotId). */
function slot<T>(value: T): Slot {
  return { slotId: value, state: SessionState.AVAILABLE, lease: null, container: {} } as unknown as Slot;
}

/**
 * The queue of single acquires, as slotQueue.ts uses it (n = 1): every case of the FIFO with
 * timeouts and aborts. Groups and their fairness rule are in slotDemandsGroups.test.ts.
 */
class WaitQueue<T> {
  readonly demands = new SlotDemands(() => undefined);
  get length(): number {
    return this.demands.length;
  }
  wait(timeoutMs: number, signal: AbortSignal | undefined, timeoutError: () => Error, abortError: () => Error): Promise<T> {
    return this.demands.wait(1, false, [], timeoutMs, signal, timeoutError, abortError).then(([s]) => s.slotId as unknown as T);
  }
  serve(value: T): boolean {
    return this.demands.serve(slot(value));
  }
  rejectAll(err: Error): void {
    this.demands.rejectAll(err);
  }
}

class TimeoutErr extends Error {}
class AbortErr extends Error {}

type Outcome<T> = { value: T } | { error: Error };

/** Starts a wait and records how it settled, so no rejection goes unhandled. */
function track<T>(q: WaitQueue<T>, timeoutMs = 1000, signal?: AbortSignal): { outcome: () => Outcome<T> | undefined; done: Promise<void> } {
  let outcome: Outcome<T> | undefined;
  const done = q.wait(timeoutMs, signal, () => new TimeoutErr('timed out'), () => new AbortErr('aborted')).then(
    (value) => {
      outcome = { value };
    },
    (error: Error) => {
      outcome = { error };
    },
  );
  return { outcome: () => outcome, done };
}

/** Lets settled promises run their handlers. */
const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('SlotDemands: single acquires', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('serves waiters in FIFO order', async () => {
    const q = new WaitQueue<string>();
    const ws = [track(q), track(q), track(q)];
    expect(q.length).toBe(3);
    expect(q.serve('a')).toBe(true);
    expect(q.serve('b')).toBe(true);
    expect(q.length).toBe(1);
    expect(q.serve('c')).toBe(true);
    await Promise.all(ws.map((w) => w.done));
    expect(ws.map((w) => w.outcome())).toEqual([{ value: 'a' }, { value: 'b' }, { value: 'c' }]);
    expect(q.length).toBe(0);
    expect(q.serve('d')).toBe(false);
  });

  it('serve returns false on an empty queue', () => {
    expect(new WaitQueue<number>().serve(1)).toBe(false);
  });

  it('a timeout rejects with the timeout error and leaves the queue', async () => {
    const q = new WaitQueue<string>();
    const early = track(q, 1000);
    const late = track(q, 5000);
    jest.advanceTimersByTime(999);
    await flush();
    expect(early.outcome()).toBeUndefined();
    expect(q.length).toBe(2);
    jest.advanceTimersByTime(1);
    await early.done;
    expect(early.outcome()).toEqual({ error: expect.any(TimeoutErr) });
    expect(q.length).toBe(1);
    // The timed-out waiter is skipped: the item goes to the next one.
    expect(q.serve('x')).toBe(true);
    await late.done;
    expect(late.outcome()).toEqual({ value: 'x' });
    expect(q.length).toBe(0);
  });

  it('a served waiter does not time out later', async () => {
    const q = new WaitQueue<string>();
    const w = track(q, 1000);
    q.serve('x');
    jest.advanceTimersByTime(10_000);
    await w.done;
    expect(w.outcome()).toEqual({ value: 'x' });
    expect(jest.getTimerCount()).toBe(0);
  });

  it('an abort rejects with the abort error and leaves the queue', async () => {
    const q = new WaitQueue<string>();
    const first = new AbortController();
    const a = track(q, 1000, first.signal);
    const b = track(q, 1000);
    first.abort();
    await a.done;
    expect(a.outcome()).toEqual({ error: expect.any(AbortErr) });
    expect(q.length).toBe(1);
    expect(q.serve('x')).toBe(true);
    await b.done;
    expect(b.outcome()).toEqual({ value: 'x' });
    expect(jest.getTimerCount()).toBe(0); // the aborted waiter's timer was cleared too
  });

  it('an already aborted signal rejects at once and never joins the queue', async () => {
    const q = new WaitQueue<string>();
    const w = track(q, 1000, AbortSignal.abort());
    await w.done;
    expect(w.outcome()).toEqual({ error: expect.any(AbortErr) });
    expect(q.length).toBe(0);
    expect(q.serve('x')).toBe(false);
  });

  it('an abort after serving or timing out changes nothing and the listener is removed', async () => {
    const q = new WaitQueue<string>();
    const served = new AbortController();
    const timedOut = new AbortController();
    const listeners = { served: 0, timedOut: 0 };
    for (const [name, c] of [['served', served], ['timedOut', timedOut]] as const) {
      const add = c.signal.addEventListener.bind(c.signal);
      const remove = c.signal.removeEventListener.bind(c.signal);
      c.signal.addEventListener = ((...args: Parameters<typeof add>) => {
        listeners[name]++;
        add(...args);
      }) as typeof add;
      c.signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
        listeners[name]--;
        remove(...args);
      }) as typeof remove;
    }
    const a = track(q, 5000, served.signal);
    const b = track(q, 1000, timedOut.signal);
    q.serve('x');
    jest.advanceTimersByTime(1000);
    served.abort();
    timedOut.abort();
    await Promise.all([a.done, b.done]);
    expect(a.outcome()).toEqual({ value: 'x' });
    expect(b.outcome()).toEqual({ error: expect.any(TimeoutErr) });
    expect(listeners).toEqual({ served: 0, timedOut: 0 });
    expect(q.length).toBe(0);
  });

  it('serve skips every settled waiter and reaches the live one', async () => {
    const q = new WaitQueue<number>();
    const controllers = Array.from({ length: 5 }, () => new AbortController());
    const gone = controllers.map((c) => track(q, 60_000, c.signal));
    const timing = [track(q, 10), track(q, 10)];
    const live = track(q, 60_000);
    for (const c of controllers) c.abort();
    jest.advanceTimersByTime(10);
    expect(q.length).toBe(1);
    expect(q.serve(7)).toBe(true);
    expect(q.serve(8)).toBe(false);
    await Promise.all([...gone, ...timing, live].map((w) => w.done));
    expect(live.outcome()).toEqual({ value: 7 });
    for (const w of [...gone, ...timing]) expect(w.outcome()).toEqual({ error: expect.any(Error) });
  });

  it('rejectAll rejects every waiter with the given error and empties the queue', async () => {
    const q = new WaitQueue<string>();
    const ws = [track(q), track(q), track(q)];
    const err = new Error('shutting down');
    q.rejectAll(err);
    expect(q.length).toBe(0);
    await Promise.all(ws.map((w) => w.done));
    for (const w of ws) expect(w.outcome()).toEqual({ error: err });
    expect(jest.getTimerCount()).toBe(0);
    expect(q.serve('x')).toBe(false);
    // The queue still works afterwards.
    const next = track(q);
    expect(q.serve('y')).toBe(true);
    await next.done;
    expect(next.outcome()).toEqual({ value: 'y' });
  });

  it('keeps FIFO order across many waiters, with some leaving in between', async () => {
    const q = new WaitQueue<number>();
    const n = 3000;
    const controllers = Array.from({ length: n }, () => new AbortController());
    const ws = controllers.map((c) => track(q, 60_000, c.signal));
    for (let i = 0; i < n; i += 3) controllers[i].abort();
    const expectedLive = ws.filter((_, i) => i % 3 !== 0);
    expect(q.length).toBe(expectedLive.length);
    let served = 0;
    while (q.serve(served)) served++;
    expect(served).toBe(expectedLive.length);
    await Promise.all(ws.map((w) => w.done));
    expectedLive.forEach((w, k) => expect(w.outcome()).toEqual({ value: k }));
  });

  it('does not keep waiters that left while nobody serves (memory stays bounded)', async () => {
    const q = new WaitQueue<number>();
    const internal = q.demands as unknown as { queue: unknown[]; head: number };
    const stayer = track(q, 10 * 60_000);
    for (let round = 0; round < 50; round++) {
      const ws = Array.from({ length: 200 }, () => track(q, 1000));
      jest.advanceTimersByTime(1000);
      await Promise.all(ws.map((w) => w.done));
      expect(q.length).toBe(1);
    }
    // 10,000 waiters came and went; the queue holds the one still waiting and at most a bounded rest.
    expect(internal.queue.length - internal.head).toBeLessThanOrEqual(2100);
    expect(q.serve(1)).toBe(true);
    await stayer.done;
    expect(stayer.outcome()).toEqual({ value: 1 });
  });
});
