/**
 * fsBatch.ts: a container's workdir creations and removals asked for while its fs lane is busy go
 * out together in the next command. A fake lane records the commands; no timing assertions.
 */
import { FsBatcher, type FsLane } from '../../src/backends/docker/fsBatch';
import { PidsLimitError } from '../../src/backends/docker/controlShell';

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
const dir = (i: number): string => `/tmp/s/${i.toString(16).padStart(4, '0')}/`;

describe('FsBatcher', () => {
  it('merges what 8 slots ask while a command runs into the next one command', async () => {
    const lane = new FakeLane();
    const batch = new FsBatcher(lane);
    const first = batch.make(dir(0), 60_000);
    const running = await lane.command(1);
    expect(running.makes).toEqual([dir(0)]);
    // Eight slots recycle while the lane is busy: each removes its last directory and makes its next.
    const asked: Promise<void>[] = [];
    for (let i = 1; i <= 8; i++) asked.push(batch.remove(dir(100 + i), 60_000), batch.make(dir(i), 60_000));
    running.finish(ok);
    await first;
    const next = await lane.command(2);
    expect(next.makes).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map(dir));
    expect([...next.removes].sort()).toEqual([101, 102, 103, 104, 105, 106, 107, 108].map(dir));
    next.finish(ok);
    await Promise.all(asked);
    expect(lane.calls).toHaveLength(2);
    expect(batch.commands).toBe(2);
  });

  it("merges a slot's removal and creation asked together into one command", async () => {
    const lane = new FakeLane();
    const batch = new FsBatcher(lane);
    const both = Promise.all([batch.remove(dir(1), 60_000), batch.make(dir(2), 60_000)]);
    const call = await lane.command(1);
    expect(call).toMatchObject({ makes: [dir(2)], removes: [dir(1)] });
    call.finish(ok);
    await both;
    expect(lane.calls).toHaveLength(1);
  });

  it('keeps a removal that failed and sends it again with the next command', async () => {
    const lane = new FakeLane();
    const batch = new FsBatcher(lane);
    const failed = batch.remove(dir(1), 60_000);
    (await lane.command(1)).finish({ made: false, removed: false });
    await expect(failed).rejects.toThrow(/rm -rf/);
    const later = batch.make(dir(2), 60_000);
    const call = await lane.command(2);
    expect(call).toMatchObject({ makes: [dir(2)], removes: [dir(1)] });
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
    // Asked again on its own once the poll comes round, and done when there is room.
    const retry = await lane.command(2);
    expect(retry).toMatchObject({ makes: [], removes: [dir(1)] });
    retry.finish(ok);
    await removed;
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
