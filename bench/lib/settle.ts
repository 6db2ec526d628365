/**
 * Waits until the machine is quiet before a timed warm-up. Removing 128 containers leaves the engine
 * and the kernel busy for a while after `docker rm` returns, and the warm-up's floor and broker run
 * back to back: without this, whichever comes second starts on a busier machine than the first.
 */
import fs from 'node:fs';
import { nowMs, sleep } from './stats';

/** Busy and total jiffies of all cores, from the first line of /proc/stat. */
function cpuJiffies(): { busy: number; total: number } {
  const fields = fs.readFileSync('/proc/stat', 'latin1').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = fields[3] + (fields[4] ?? 0); // idle + iowait
  return { busy: total - idle, total };
}

export interface SettleResult {
  waitedMs: number;
  /** Busy cores over the last window (all cores busy = the core count). */
  busyCores: number;
  settled: boolean;
}

/**
 * Resolves once a `windowMs` window saw fewer than `maxBusyCores` busy cores, or after `timeoutMs`
 * (a shared machine may never get that quiet: the run goes on and says so).
 */
export async function settle(cores: number, { maxBusyCores = 0.25, windowMs = 1000, timeoutMs = 30_000 } = {}): Promise<SettleResult> {
  const t0 = nowMs();
  let busyCores = cores;
  while (nowMs() - t0 < timeoutMs) {
    const a = cpuJiffies();
    await sleep(windowMs);
    const b = cpuJiffies();
    busyCores = b.total > a.total ? (cores * (b.busy - a.busy)) / (b.total - a.total) : 0;
    if (busyCores < maxBusyCores) return { waitedMs: nowMs() - t0, busyCores, settled: true };
  }
  return { waitedMs: nowMs() - t0, busyCores, settled: false };
}
