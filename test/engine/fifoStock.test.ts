/**
 * FifoStock (src/backends/docker/shells/fifoStock.ts): named pipes made in batches by real `mkfifo`, moved
 * into place by rename. Pinned: every destination gets its own pipe (mode 0600), a burst of callers
 * is served by few batches, a caller whose directory is gone fails alone, and a stock whose directory
 * was swept under it recovers.
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FifoStock, STOCK_BATCH } from '../../src/backends/docker/shells/fifoStock';
import { BackendError } from '../../src/common/errors';

describe('FifoStock', () => {
  let root: string;
  let stock: FifoStock;

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'bkr-stock-'));
    stock = new FifoStock(path.join(root, '.stock'));
  });

  afterEach(async () => {
    await stock.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  const dest = (dir: string, n: number): string[] => {
    fs.mkdirSync(path.join(root, dir), { recursive: true });
    return Array.from({ length: n }, (_, i) => path.join(root, dir, `p${i}`));
  };

  it('puts a fresh named pipe (0600) at every destination', async () => {
    const paths = dest('a', 3);
    await stock.take(paths);
    for (const p of paths) {
      const st = fs.lstatSync(p);
      expect(st.isFIFO()).toBe(true);
      expect(st.mode & 0o777).toBe(0o600);
    }
    expect(new Set(paths.map((p) => fs.lstatSync(p).ino)).size).toBe(3);
    expect(fs.statSync(stock.dir).mode & 0o777).toBe(0o700);
  });

  it('serves a burst of 300 callers (1200 pipes) with a handful of mkfifo batches', async () => {
    const all = Array.from({ length: 300 }, (_, i) => dest(`c${i}`, 4));
    await Promise.all(all.map((paths) => stock.take(paths)));
    const inodes = new Set(all.flat().map((p) => fs.lstatSync(p).isFIFO() && fs.lstatSync(p).ino));
    expect(inodes.size).toBe(1200);
    expect(inodes.has(false)).toBe(false);
    // The first batch (STOCK_BATCH) serves the first callers; the next is sized for all still waiting.
    expect(stock.batches).toBeLessThanOrEqual(3);
    expect(stock.size).toBeLessThan(2 * STOCK_BATCH);
    expect(fs.readdirSync(stock.dir).length).toBe(stock.size);
  });

  it('fails only the caller whose directory is gone, and keeps its pipes for the next', async () => {
    await stock.take(dest('warm', 1)); // the stock exists now
    const before = stock.size;
    const gone = [path.join(root, 'missing', 'p0'), path.join(root, 'missing', 'p1')];
    await expect(stock.take(gone)).rejects.toBeInstanceOf(BackendError);
    expect(stock.size).toBe(before);
    const ok = dest('b', 2);
    await stock.take(ok);
    expect(ok.every((p) => fs.lstatSync(p).isFIFO())).toBe(true);
  });

  it('makes a new stock when its directory was swept under it', async () => {
    await stock.take(dest('first', 1));
    fs.rmSync(stock.dir, { recursive: true, force: true });
    // The first take after the sweep finds its pipes gone and fails; the stock starts over.
    await expect(stock.take(dest('second', 1))).rejects.toBeInstanceOf(BackendError);
    const paths = dest('third', 2);
    await stock.take(paths);
    expect(paths.every((p) => fs.lstatSync(p).isFIFO())).toBe(true);
  });

  it('after close, takes fail and the directory is gone', async () => {
    await stock.take(dest('x', 1));
    await stock.close();
    expect(fs.existsSync(stock.dir)).toBe(false);
    await expect(stock.take(dest('y', 1))).rejects.toBeInstanceOf(BackendError);
  });
});
