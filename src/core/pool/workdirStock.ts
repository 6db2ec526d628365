/**
 * Working directories made ahead, per container, a batch at a time: a slot's rebuild takes its next
 * lease's session id and directory from here instead of asking the backend for one directory each.
 *
 * Why: on Docker a directory is a `mkdir` forked in the container (its fs lane), 1-2 ms of CPU on
 * this kind of machine, and an episode paid about half of one (creations asked in the same moment
 * were merged, not more). A batch asks for all its directories in one turn of the event loop, which
 * the backend merges into one command: an episode's share becomes 1 / batch of a fork, and a rebuild
 * almost never waits for a round trip (the directory was made long before).
 *
 * The stocked ids are as secret as a prepared slot's (never logged) and their directories empty,
 * like a prepared slot's. A container replaced (a new ref) starts a new stock; the old one's
 * directories went with their container (Docker) or are removed (local, where they outlive it).
 */
import { sessionWorkdir, type ContainerRef, type SessionBackend } from '../ports/backend';
import type { ContainerEntry } from './slot';
import { newSessionId } from '../../common/ids';

/** A lease's id to be, its directory, and the backend's creation of it (may still be running). */
export interface StockedWorkdir {
  readonly id: string;
  readonly dir: string;
  readonly made: Promise<void>;
}

interface Entry extends StockedWorkdir {
  failed: boolean;
}

interface Stock {
  ref: ContainerRef;
  entries: Entry[];
}

/** Directories per batch, per session of the container: a batch lasts each slot this many episodes. */
export const BATCH_PER_SLOT = 8;

export class WorkdirStock {
  private readonly stocks = new WeakMap<ContainerEntry, Stock>();

  constructor(private readonly backend: SessionBackend) {}

  /**
   * The next directory of `container` (whose live ref is `ref`), made or being made. A new batch is
   * asked for when fewer than one per slot remain, so that a busy container's rebuilds find theirs made.
   */
  take(container: ContainerEntry, ref: ContainerRef): StockedWorkdir {
    let stock = this.stocks.get(container);
    if (stock?.ref !== ref) {
      if (stock) this.discard(stock);
      stock = { ref, entries: [] };
      this.stocks.set(container, stock);
    }
    const slots = Math.max(1, container.slots.length);
    let entry = this.next(stock);
    if (!entry) {
      this.refill(stock, slots * BATCH_PER_SLOT);
      entry = stock.entries.shift() as Entry;
    }
    if (stock.entries.length < slots) this.refill(stock, slots * BATCH_PER_SLOT);
    return entry;
  }

  /** The oldest entry not known to have failed; failed ones are dropped (and removed, in case part was made). */
  private next(stock: Stock): Entry | undefined {
    let entry: Entry | undefined;
    while ((entry = stock.entries.shift())?.failed) this.removeQuietly(stock.ref, entry.dir);
    return entry;
  }

  /** `count` new directories, asked for in this one turn of the event loop (merged by the backend). */
  private refill(stock: Stock, count: number): void {
    for (let i = 0; i < count; i++) {
      const id = newSessionId();
      const dir = sessionWorkdir(id);
      const entry: Entry = { id, dir, made: this.backend.prepareWorkdir(stock.ref, dir, []), failed: false };
      // Marks it for the next take (whoever took it already awaits `made` and sees the error itself).
      entry.made.catch(() => (entry.failed = true));
      stock.entries.push(entry);
    }
  }

  /** A replaced container's stock: its directories, once made, are removed (a no-op where they went with it). */
  private discard(stock: Stock): void {
    for (const entry of stock.entries) {
      entry.made.then(
        () => this.removeQuietly(stock.ref, entry.dir),
        () => this.removeQuietly(stock.ref, entry.dir),
      );
    }
    stock.entries = [];
  }

  private removeQuietly(ref: ContainerRef, dir: string): void {
    this.backend.removeWorkdir(ref, dir).catch(() => undefined);
  }
}
