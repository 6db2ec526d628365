/**
 * workdirStock.ts: the next leases' directories are asked of the backend a batch at a time, in one
 * turn of the event loop (the Docker backend merges them into one `mkdir`), refilled before they run
 * out, and never handed out once known to have failed. A fake backend records the calls (a pure unit:
 * the real backends' creation is covered by the HTTP suites on both backends).
 * @backend any
 */
import { BATCH_PER_SLOT, WorkdirStock } from '../../src/core/pool/workdirStock';
import { ContainerEntry, Slot } from '../../src/core/pool/slot';
import { sessionWorkdir, type ContainerRef, type SessionBackend } from '../../src/core/ports/backend';
import { SESSION_ID_PATTERN } from '../../src/common/ids';

class FakeBackend {
  readonly made: { ref: ContainerRef; dir: string; settle: (err?: Error) => void }[] = [];
  readonly removed: { ref: ContainerRef; dir: string }[] = [];
  prepareWorkdir(ref: ContainerRef, dir: string): Promise<void> {
    return new Promise((resolve, reject) => this.made.push({ ref, dir, settle: (err) => (err ? reject(err) : resolve()) }));
  }
  removeWorkdir(ref: ContainerRef, dir: string): Promise<void> {
    this.removed.push({ ref, dir });
    return Promise.resolve();
  }
}

function containerOf(slots: number): ContainerEntry {
  const c = new ContainerEntry(0);
  for (let i = 0; i < slots; i++) c.slots.push(new Slot(`c0s${i}`, c));
  return c;
}

/** A stock over a fake backend, for a container of `slots` sessions. */
function setup(slots: number): { backend: FakeBackend; stock: WorkdirStock; container: ContainerEntry; ref: ContainerRef } {
  const backend = new FakeBackend();
  return { backend, stock: new WorkdirStock(backend as unknown as SessionBackend), container: containerOf(slots), ref: { id: 'c1', name: 'c1' } };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('WorkdirStock', () => {
  it('asks for a batch per slot at once, hands them out oldest first, and refills before fewer than one per slot remain', async () => {
    const { backend, stock, container, ref } = setup(8);
    const batch = 8 * BATCH_PER_SLOT;
    const first = stock.take(container, ref);
    expect(backend.made).toHaveLength(batch);
    expect(first.dir).toBe(sessionWorkdir(first.id));
    expect(first.dir).toBe(backend.made[0].dir);
    expect(first.id).toMatch(SESSION_ID_PATTERN);
    for (const m of backend.made) m.settle();
    await first.made;
    const taken = [first];
    while (taken.length < batch - 8) taken.push(stock.take(container, ref));
    expect(backend.made).toHaveLength(batch); // 8 left: still one per slot
    taken.push(stock.take(container, ref));
    expect(backend.made).toHaveLength(2 * batch); // 7 left: the next batch is on its way
    expect(new Set(backend.made.map((m) => m.dir)).size).toBe(2 * batch);
    expect(taken.map((t) => t.dir)).toEqual(backend.made.slice(0, batch - 7).map((m) => m.dir));
    expect(backend.made.every((m) => m.ref === ref)).toBe(true);
  });

  it('skips (and removes) directories whose creation failed, and asks for new ones', async () => {
    const { backend, stock, container, ref } = setup(1);
    const first = stock.take(container, ref);
    const batch = BATCH_PER_SLOT;
    expect(backend.made).toHaveLength(batch);
    for (const m of backend.made) m.settle(new Error('no room'));
    await expect(first.made).rejects.toThrow('no room');
    await tick();
    const next = stock.take(container, ref);
    // The other failed ones were dropped and removed (part may exist); the next came from a new batch.
    expect(backend.removed.map((r) => r.dir)).toEqual(backend.made.slice(1, batch).map((m) => m.dir));
    expect(backend.made).toHaveLength(2 * batch);
    expect(next.dir).toBe(backend.made[batch].dir);
  });

  it('starts a new stock for a replaced container, and removes the old one\'s directories once made', async () => {
    const { backend, stock, container } = setup(1);
    const oldRef = { id: 'old', name: 'old' };
    stock.take(container, oldRef);
    const batch = BATCH_PER_SLOT;
    const newRef = { id: 'new', name: 'new' };
    const next = stock.take(container, newRef);
    expect(backend.made.slice(batch).every((m) => m.ref === newRef)).toBe(true);
    expect(next.dir).toBe(backend.made[batch].dir);
    expect(backend.removed).toEqual([]); // not before their creation settled
    for (const m of backend.made.slice(0, batch)) m.settle();
    await tick();
    expect(backend.removed.map((r) => [r.ref.id, r.dir])).toEqual(backend.made.slice(1, batch).map((m) => ['old', m.dir]));
  });
});
