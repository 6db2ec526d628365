/**
 * fsBatch.ts: a container's workdir creations and removals asked for while its fs lane is busy go
 * out together in the next command. A fake lane records the commands; no timing assertions.
 * @backend any
 */
import { FsBatcher as Batcher, type FsLane } from '../../src/backends/docker/files/fsBatch';
import { PidsLimitError } from '../../src/backends/docker/control/controlShell';

interface Call {
  makes: readonly string[];
  removes: readonly string[];
  finish: (outcome: { made: boolean; removed: boolean } | Error) => void;
}

/** A lane whose commands end when the test says so. */
class FakeLane implements FsLane {
  alive = true;
  readonly calls: Call[] = [];
  private waiting: (() => void) | null = null;
  fsBatch(makes: readonly string[], removes: readonly string[]): Promise<{ made: boolean; removed: boolean }> {
    return new Promise((resolve, reject) => {
      this.calls.push({ makes, removes, finish: (o) => (o instanceof Error ? reject(o) : resolve(o)) });
      this.waiting?.();
    });
  }
  /** Resolves once the lane has received its `n`th command. */
  async command(n: number): Promise<Call> {
    while (this.calls.length < n) await new Promise<void>((r) => (this.waiting = r));
    return this.calls[n - 1];
  }
}

const ok = { made: true, removed: true };

/** The batcher with a removal delay of 2 s instead of the broker's 15: the same order of events, a shorter wait. */
class FsBatcher extends Batcher {
  constructor(lane: FsLane) {
    super(lane, 2000);
  }
}
const dir = (i: number): string => `/tmp/s/${i.toString(16).padStart(4, '0')}/`;

describe('FsBatcher', () => {
  it('merges the creations 8 slots ask while a command runs into the next command, and their removals into one later', async () => {
    const lane = new FakeLane();
    const batch = new FsBatcher(lane);
    const first = batch.make(dir(0), 60_000);
    const running = await lane.command(1);
    expect(running).toMatchObject({ makes: [dir(0)], removes: [] });
    // Eight slots recycle while the lane is busy: each removes its last directory and makes its next.
    const removed: Promise<void>[] = [];
    const made: Promise<void>[] = [];
    for (let i = 1; i <= 8; i++) {
      removed.push(batch.remove(dir(100 + i), 60_000));
      made.push(batch.make(dir(i), 60_000));
    }
    running.finish(ok);
    await first;
    const next = await lane.command(2);
    // The creations are waited for: they go at once. The removals are held to go out together.
    expect(next).toMatchObject({ makes: [1, 2, 3, 4, 5, 6, 7, 8].map(dir), removes: [] });
    next.finish(ok);
    await Promise.all(made);
    const removal = await lane.command(3);
    expect(removal.makes).toEqual([]);
    expect([...removal.removes].sort()).toEqual([101, 102, 103, 104, 105, 106, 107, 108].map(dir));
    removal.finish(ok);
    await Promise.all(removed);
    expect(lane.calls).toHaveLength(3);
    expect(batch.commands).toBe(3);
  });

  it('keeps a removal that failed and sends it again with the next removals', async () => {
    const lane = new FakeLane();
    const batch = new FsBatcher(lane);
    const failed = batch.remove(dir(1), 60_000);
    (await lane.command(1)).finish({ made: false, removed: false });
    await expect(failed).rejects.toThrow(/rm -rf/);
    // A creation alone does not take it (nobody waits for a removal: it is not worth a fork then).
    const made = batch.make(dir(2), 60_000);
    const creation = await lane.command(2);
    expect(creation).toMatchObject({ makes: [dir(2)], removes: [] });
    creation.finish(ok);
    await made;
    const later = batch.remove(dir(3), 60_000);
    const call = await lane.command(3);
    expect(call).toMatchObject({ makes: [], removes: [dir(3), dir(1)] });
    call.finish(ok);
    await later;
  });

  it('at the pids limit: a creation fails at once (the caller uploads instead), a removal waits for room', async () => {
    const lane = new FakeLane();
    const batch = new FsBatcher(lane);
    const made = batch.make(dir(2), 60_000);
    const removed = batch.remove(dir(1), 60_000);
    (await lane.command(1)).finish(new PidsLimitError('c0ffee', 'test'));
    await expect(made).rejects.toBeInstanceOf(PidsLimitError);
    (await lane.command(2)).finish(new PidsLimitError('c0ffee', 'test'));
    // Asked again on its own once the delay comes round, and done when there is room.
    const retry = await lane.command(3);
    expect(retry).toMatchObject({ makes: [], removes: [dir(1)] });
    retry.finish(ok);
    await removed;
  });

  it('sends held removals at once when one is asked for with `now` (space short), or when 64 are held', async () => {
    const lane = new FakeLane();
    const batch = new FsBatcher(lane);
    const held = batch.remove(dir(1), 60_000);
    const urgent = batch.remove(dir(2), 60_000, true);
    const first = await lane.command(1);
    expect(first).toMatchObject({ makes: [], removes: [dir(1), dir(2)] });
    first.finish(ok);
    await Promise.all([held, urgent]);
    const many = Array.from({ length: 64 }, (_, i) => batch.remove(dir(100 + i), 60_000));
    const second = await lane.command(2);
    expect(second.removes).toHaveLength(64);
    second.finish(ok);
    await Promise.all(many);
  });

  it('settles everything when its container is gone', async () => {
    const lane = new FakeLane();
    const batch = new FsBatcher(lane);
    const running = batch.make(dir(1), 60_000);
    await lane.command(1);
    const queuedMake = batch.make(dir(2), 60_000);
    const queuedRemove = batch.remove(dir(3), 60_000);
    batch.close();
    await expect(running).rejects.toThrow(/gone/);
    await expect(queuedMake).rejects.toThrow(/gone/);
    await queuedRemove;
  });
});
