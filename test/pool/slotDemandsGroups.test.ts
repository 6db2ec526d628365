/**
 * The fairness rule between group and single acquires (slotDemands.ts), through SlotQueue as the
 * pool uses it: one FIFO; a free slot goes to the oldest waiter that can use it; a group at the head
 * keeps what it is given until it has all n; with `spread`, a slot of a container the head group
 * already holds goes to the next waiter.
 * @backend any
 */
import { SlotQueue } from '../../src/core/pool/slotQueue';
import { SessionState } from '../../src/core/pool/states';
import type { Slot } from '../../src/core/pool/slot';

const containers = [{ name: 'c0' }, { name: 'c1' }, { name: 'c2' }];
let nextId = 0;
function slot(container = 0): Slot {
  return { slotId: `s${nextId++}`, state: SessionState.AVAILABLE, lease: null, container: containers[container] } as unknown as Slot;
}

class Exhausted extends Error {}
const farDeadline = (): number => Date.now() + 60_000;

/** Records the order in which waits settle, and what each got. */
function recorder() {
  const order: string[] = [];
  const got = new Map<string, Slot[] | Error>();
  const track = (name: string, p: Promise<Slot | Slot[]>): void => {
    void p.then(
      (v) => {
        order.push(name);
        got.set(name, Array.isArray(v) ? v : [v]);
      },
      (err: Error) => {
        order.push(name);
        got.set(name, err);
      },
    );
  };
  return { order, got, track };
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('SlotQueue: groups and singles in one FIFO', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('a group at the head is not starved by singles queued behind it: freed slots wait for it', async () => {
    const q = new SlotQueue();
    const r = recorder();
    r.track('group', q.takeGroup(3, false, undefined, farDeadline(), () => new Exhausted()));
    for (const name of ['single1', 'single2']) r.track(name, q.take(undefined, farDeadline(), () => new Exhausted()));
    expect(q.waiting).toBe(3);
    const freed = [slot(), slot(), slot(), slot(), slot()];
    for (const s of freed.slice(0, 2)) q.offer(s);
    await flush();
    expect(r.order).toEqual([]); // two slots are reserved for the group; the singles behind it wait
    q.offer(freed[2]);
    await flush();
    expect(r.order).toEqual(['group']);
    expect(r.got.get('group')).toEqual(freed.slice(0, 3));
    q.offer(freed[3]);
    q.offer(freed[4]);
    await flush();
    expect(r.order).toEqual(['group', 'single1', 'single2']);
    expect(q.waiting).toBe(0);
  });

  it('singles queued before a group are served first: a group never jumps the queue', async () => {
    const q = new SlotQueue();
    const r = recorder();
    r.track('single1', q.take(undefined, farDeadline(), () => new Exhausted()));
    r.track('group', q.takeGroup(2, false, undefined, farDeadline(), () => new Exhausted()));
    r.track('single2', q.take(undefined, farDeadline(), () => new Exhausted()));
    for (let i = 0; i < 4; i++) {
      q.offer(slot());
      await flush(); // one at a time: the order seen is the order served
    }
    expect(r.order).toEqual(['single1', 'group', 'single2']);
  });

  it('a new acquire takes free slots only when nobody waits before it', async () => {
    const q = new SlotQueue();
    const free = [slot(), slot()];
    for (const s of free) q.offer(s);
    await expect(q.takeGroup(2, false, undefined, farDeadline(), () => new Exhausted())).resolves.toEqual(free);
    const r = recorder();
    r.track('group', q.takeGroup(2, false, undefined, farDeadline(), () => new Exhausted()));
    const one = slot();
    q.offer(one); // reserved for the waiting group, not left on the free list
    r.track('single', q.take(undefined, farDeadline(), () => new Exhausted()));
    for (let i = 0; i < 2; i++) {
      q.offer(slot());
      await flush();
    }
    expect(r.order).toEqual(['group', 'single']);
    expect((r.got.get('group') as Slot[])[0]).toBe(one);
  });

  it('spread: a slot of a container the head group holds goes to the next waiter', async () => {
    const q = new SlotQueue();
    const r = recorder();
    r.track('group', q.takeGroup(2, true, undefined, farDeadline(), () => new Exhausted()));
    r.track('single', q.take(undefined, farDeadline(), () => new Exhausted()));
    const [a0, b0, c1] = [slot(0), slot(0), slot(1)];
    q.offer(a0);
    q.offer(b0); // the group has c0 already: the single behind it gets this one
    await flush();
    expect(r.order).toEqual(['single']);
    expect(r.got.get('single')).toEqual([b0]);
    q.offer(c1);
    await flush();
    expect(r.got.get('group')).toEqual([a0, c1]);
  });

  it('a group that times out gives its reserved slots to the waiters behind it, in order', async () => {
    const q = new SlotQueue();
    const r = recorder();
    r.track('group', q.takeGroup(3, false, undefined, Date.now() + 1000, () => new Exhausted()));
    r.track('single', q.take(undefined, farDeadline(), () => new Exhausted()));
    const held = [slot(), slot()];
    for (const s of held) q.offer(s);
    await flush();
    expect(r.order).toEqual([]);
    jest.advanceTimersByTime(1000);
    await flush();
    expect(r.order).toEqual(['group', 'single']);
    expect(r.got.get('group')).toBeInstanceOf(Exhausted);
    expect(r.got.get('single')).toEqual([held[0]]);
    // The other reserved slot is free again for whoever comes next.
    await expect(q.take(undefined, farDeadline(), () => new Exhausted())).resolves.toBe(held[1]);
  });

  it('a reserved slot that broke meanwhile is not handed over: the group waits for another', async () => {
    const q = new SlotQueue();
    const r = recorder();
    r.track('group', q.takeGroup(2, false, undefined, farDeadline(), () => new Exhausted()));
    const [a, b, c] = [slot(), slot(), slot()];
    q.offer(a);
    (a as { state: SessionState }).state = SessionState.BROKEN;
    q.offer(b);
    await flush();
    expect(r.order).toEqual([]);
    q.offer(c);
    await flush();
    expect(r.got.get('group')).toEqual([b, c]);
  });
});
