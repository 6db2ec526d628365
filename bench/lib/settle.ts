/**
 * Waits until the machine is quiet before a timed warm-up. Removing 128 containers leaves the engine
 * and the kernel busy for a while after `docker rm` returns, and the warm-up's floor and broker run
 * back to back: without this, whichever comes second starts on a busier machine than the first.
 */
import { nowMs, sleep } from './stats';
import { machineTicks } from './cpuAccount';

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
    const a = machineTicks();
    await sleep(windowMs);
    const b = machineTicks();
    busyCores = b.total > a.total ? (cores * (b.busy - a.busy)) / (b.total - a.total) : 0;
    if (busyCores < maxBusyCores) return { waitedMs: nowMs() - t0, busyCores, settled: true };
  }
  return { waitedMs: nowMs() - t0, busyCores, settled: false };
}
