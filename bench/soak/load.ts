/**
 * The load: N clients, each a loop of episodes until the deadline, then a bounded drain (a client
 * finishes the episode it is in; whatever is still open after the drain is cut). Abandoned leases
 * are probed as they fall due.
 */
import { runEpisode, type EpisodeOptions } from './episode';
import type { SoakHttp } from './http';
import { Random } from './random';
import { ReclaimWatch } from './reclaimWatch';
import type { Tally } from './tally';
import { sleep } from '../lib/stats';

export interface LoadSpec {
  clients: number;
  durationMs: number;
  drainMs: number;
  seed: number;
  episode: EpisodeOptions;
}

const PROBE_EVERY_MS = 1000;
const RAMP_MS = 2000;

export async function runLoad(http: SoakHttp, tally: Tally, reclaims: ReclaimWatch, spec: LoadSpec, log: (line: string) => void): Promise<void> {
  const stopAt = Date.now() + spec.durationMs;
  const prober = setInterval(() => void reclaims.probeDue(), PROBE_EVERY_MS);
  const progress = setInterval(() => {
    log(`${tally.outcome('episodes ended')} episodes, ${tally.errorCount} unexpected, ${reclaims.waiting} abandoned leases awaiting their probe`);
  }, 30_000);
  const client = async (index: number): Promise<void> => {
    const rnd = new Random(spec.seed + index);
    await sleep(rnd.int(0, RAMP_MS)); // not 300 acquires in the same millisecond
    while (Date.now() < stopAt) await runEpisode({ http, tally, rnd, reclaims }, spec.episode);
  };
  const all = Promise.all(Array.from({ length: spec.clients }, (_, i) => client(i)));
  try {
    await sleep(spec.durationMs);
    log(`load stopped; clients finish their episode (at most ${spec.drainMs / 1000} s)`);
    const drained = await Promise.race([all.then(() => true), sleep(spec.drainMs).then(() => false)]);
    if (!drained) {
      log('drain bound reached: cutting the requests still open');
      http.cutAll();
    }
    await all;
  } finally {
    clearInterval(prober);
    clearInterval(progress);
  }
}
