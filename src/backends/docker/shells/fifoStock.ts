/**
 * Named pipes made ahead, hundreds per `mkfifo` process, and moved into place with rename(2).
 *
 * Node has no mkfifo(3), so a pipe costs a process. Spawned from the broker (a large process) that is
 * ~2 ms of its event loop and CPU each (the fork copies its page tables), and a warm-up of 1024
 * sessions needs ~4000 pipes (three per shell, six per container's lanes, two for its spawner):
 * batching the pipes asked for in one turn of the event loop still left ~1000 spawns, the largest
 * part of the broker's CPU during the warm-up. A stock in a private directory
 * beside the containers' directories (same filesystem, so rename works; not mounted in any
 * container) turns that into ~16 spawns; a rename is one syscall.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { BackendError, errorMessage } from '../../../common/errors';

const execFileAsync = promisify(execFile);

/** Pipes per `mkfifo` process: ~20 KB of arguments, ~10 ms of mknod calls. */
export const STOCK_BATCH = 256;
/** Below this many pipes in stock, the next batch is made before anyone has to wait for it. */
const LOW_WATER = 64;

interface Waiter {
  count: number;
  resolve: (names: string[]) => void;
  reject: (err: Error) => void;
}

export class FifoStock {
  private readonly available: string[] = [];
  private readonly waiters: Waiter[] = [];
  private refilling = false;
  private dirMade = false;
  private closed = false;
  private batchCount = 0;

  /** `dir`: created on first use (mode 0700), on the same filesystem as every destination. */
  constructor(readonly dir: string) {}

  /** How many pipes are in stock (for tests). */
  get size(): number {
    return this.available.length;
  }

  /** How many `mkfifo` processes made pipes so far (for tests). */
  get batches(): number {
    return this.batchCount;
  }

  /**
   * Puts a new named pipe (mode 0600) at each of `destinations`. Throws a BackendError when the
   * pipes cannot be made, or a destination's directory is gone (that caller alone fails).
   */
  async take(destinations: readonly string[]): Promise<void> {
    const sources = await this.reserve(destinations.length);
    // Synchronous renames: one syscall each within one filesystem (a tmpfs by default, fifoRoot.ts).
    // Through the thread pool each cost a worker's wakeup and the event loop's, ~20x the syscall:
    // ~0.2 s of the broker's 1024-session warm-up profile, for ~3000 renames.
    let failure: { at: number; err: unknown } | null = null;
    let stockLost = false;
    for (const [i, src] of sources.entries()) {
      try {
        fs.renameSync(src, destinations[i]);
      } catch (err) {
        failure ??= { at: i, err };
        // Pipes not moved go back to the stock; the moved ones are the caller's to remove. A pipe
        // that is gone from the stock means its directory was removed under us (another broker's
        // start sweeps the deployment's pipes): the rest of the stock is gone too.
        if (fs.existsSync(src)) this.available.push(src);
        else stockLost = true;
      }
    }
    if (!failure) return;
    if (stockLost) {
      this.available.length = 0;
      this.dirMade = false;
    }
    throw new BackendError(`could not place a named pipe at ${destinations[failure.at]}: ${errorMessage(failure.err)}`);
  }

  /** Removes the stock's directory; later takes fail. */
  async close(): Promise<void> {
    this.closed = true;
    this.available.length = 0;
    for (const w of this.waiters.splice(0)) w.reject(new BackendError('the broker is stopping'));
    await fs.promises.rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }

  private reserve(count: number): Promise<string[]> {
    if (this.closed) return Promise.reject(new BackendError('the broker is stopping'));
    if (this.waiters.length === 0 && this.available.length >= count) {
      const names = this.takeNames(count);
      if (this.available.length < LOW_WATER) void this.refill();
      return Promise.resolve(names);
    }
    return new Promise((resolve, reject) => {
      this.waiters.push({ count, resolve, reject });
      void this.refill();
    });
  }

  /** One batch at a time, sized for everyone waiting; repeats while anyone still waits or stock is low. */
  private async refill(): Promise<void> {
    if (this.refilling || this.closed) return;
    this.refilling = true;
    try {
      while (!this.closed && (this.waiters.length > 0 || this.available.length < LOW_WATER)) {
        const wanted = this.waiters.reduce((n, w) => n + w.count, 0);
        await this.makeBatch(Math.max(STOCK_BATCH, wanted + LOW_WATER));
        this.serveWaiters();
      }
    } catch (err) {
      const failure = new BackendError(`could not make named pipes in ${this.dir}: ${errorMessage(err)}`);
      for (const w of this.waiters.splice(0)) w.reject(failure);
    } finally {
      this.refilling = false;
    }
  }

  private async makeBatch(count: number): Promise<void> {
    if (!this.dirMade) {
      await fs.promises.mkdir(this.dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      this.dirMade = true;
    }
    this.batchCount++;
    const prefix = path.join(this.dir, randomBytes(8).toString('hex'));
    const names = Array.from({ length: count }, (_, i) => `${prefix}.${i}`);
    try {
      await execFileAsync('mkfifo', ['-m', '600', '--', ...names]);
    } catch (err) {
      // The directory may have been removed under us (another broker's start sweeps the deployment's
      // pipes): make it again next time.
      this.dirMade = false;
      throw err;
    }
    if (!this.closed) this.available.push(...names);
  }

  private serveWaiters(): void {
    while (this.waiters.length > 0 && this.available.length >= this.waiters[0].count) {
      const w = this.waiters.shift() as Waiter;
      w.resolve(this.takeNames(w.count));
    }
  }

  private takeNames(count: number): string[] {
    return this.available.splice(this.available.length - count, count);
  }
}
