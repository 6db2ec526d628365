/**
 * Open-loop arrivals: work starts at Poisson times at a given rate, whether or not earlier work has
 * finished (a client population that does not wait for the broker, as rollout fleets do not). The
 * returned promise settles once every started item has ended.
 */
import { Random } from './random';
import { sleep } from '../lib/stats';

export async function openLoop(rateHz: number, durationMs: number, seed: number, start: (index: number, rnd: Random) => Promise<void>): Promise<number> {
  const rnd = new Random(seed);
  const running: Promise<void>[] = [];
  const t0 = Date.now();
  let next = 0;
  let index = 0;
  for (;;) {
    // Exponential gaps: -ln(U) / rate.
    next += (-Math.log(1 - rnd.next()) / rateHz) * 1000;
    if (next >= durationMs) break;
    const wait = t0 + next - Date.now();
    if (wait > 0) await sleep(wait);
    const i = index++;
    running.push(start(i, new Random(seed * 7919 + i)).catch(() => undefined));
  }
  await Promise.all(running);
  return index;
}
