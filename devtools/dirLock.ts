/**
 * One holder at a time for a cache several test processes may build at once (the compiled broker,
 * the Python client's venv): jest's workers and the two projects start such suites together, and two
 * builders writing one directory leave it broken.
 *
 * proper-lockfile does it as a directory made atomically (`mkdir`) beside the guarded path, whose
 * mtime its holder refreshes while the work runs: a lock left by a crashed holder stops being
 * refreshed and is taken over once it is `staleMs` old, however long a live holder's work takes.
 */
import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';

/** How often a waiter tries the lock again, in ms. */
const RETRY_MS = 200;

/** Runs `work` while holding the lock directory `${guarded}.lock`, waiting up to `waitMs` for it. */
export async function underDirLock<T>(guarded: string, waitMs: number, work: () => Promise<T>): Promise<T> {
  fs.mkdirSync(path.dirname(guarded), { recursive: true });
  const release = await lockfile.lock(guarded, {
    realpath: false, // the guarded path (a venv, a build directory) may not exist yet: its builder makes it
    stale: 30_000,
    retries: { retries: Math.ceil(waitMs / RETRY_MS), minTimeout: RETRY_MS, maxTimeout: RETRY_MS, factor: 1 },
  });
  try {
    return await work();
  } finally {
    await release();
  }
}
