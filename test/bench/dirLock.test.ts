/**
 * The lock that caches built by several test processes at once (the compiled broker, the Python
 * client's venv) are made under: one holder at a time, and a crashed holder's lock taken over.
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { underDirLock } from '../../devtools/dirLock';

describe('underDirLock', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dirlock-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('lets one holder at a time run its work, and frees the lock after each', async () => {
    const guarded = path.join(dir, 'cache');
    const events: string[] = [];
    let releaseFirst!: () => void;
    const firstMayEnd = new Promise<void>((r) => (releaseFirst = r));
    const first = underDirLock(guarded, 10_000, async () => {
      events.push('first in');
      await firstMayEnd;
      events.push('first out');
    });
    // The first holds the lock once its directory exists: only then does the second ask.
    while (!fs.existsSync(`${guarded}.lock`)) await new Promise((r) => setImmediate(r));
    const second = underDirLock(guarded, 10_000, async () => {
      events.push('second in');
      return 7;
    });
    await new Promise((r) => setTimeout(r, 50));
    releaseFirst();
    await first;
    expect(await second).toBe(7);
    expect(events).toEqual(['first in', 'first out', 'second in']);
    expect(fs.existsSync(`${guarded}.lock`)).toBe(false);
  });

  it('takes over a lock its holder left when it crashed (not refreshed for longer than stale)', async () => {
    const guarded = path.join(dir, 'venv');
    fs.mkdirSync(`${guarded}.lock`);
    const longAgo = new Date(Date.now() - 10 * 60_000);
    fs.utimesSync(`${guarded}.lock`, longAgo, longAgo);
    await expect(underDirLock(guarded, 5_000, async () => 'built')).resolves.toBe('built');
  });

  it('frees the lock when the work throws', async () => {
    const guarded = path.join(dir, 'broken');
    await expect(underDirLock(guarded, 5_000, async () => { throw new Error('tsc failed'); })).rejects.toThrow('tsc failed');
    await expect(underDirLock(guarded, 5_000, async () => 'again')).resolves.toBe('again');
  });
});
