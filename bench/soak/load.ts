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
import { bar, clock, type ProgressLine } from '../lib/progress';

export interface LoadSpec {
  clients: number;
  durationMs: number;
  drainMs: number;
  seed: number;
  episode: EpisodeOptions;
}

const PROBE_EVERY_MS = 1000;
const RAMP_MS = 2000;

/** The progress line's text: time through the load, episodes and their rate, unexpected answers. */
function loadText(startMs: number, spec: LoadSpec, tally: Tally, reclaims: ReclaimWatch): string {
  const ranS = (Date.now() - startMs) / 1000;
  const episodes = tally.outcome('episodes ended');
  const rate = ranS > 0 ? (episodes / ranS).toFixed(0) : '0';
  const phase = ranS * 1000 < spec.durationMs ? `${clock(ranS)} of ${clock(spec.durationMs / 1000)}` : `draining (${clock(ranS)})`;
  return `load ${bar((ranS * 1000) / spec.durationMs)} ${phase}: ${episodes} episodes (${rate}/s), ${tally.errorCount} unexpected, ${reclaims.waiting} abandoned awaiting probe`;
}

export async function runLoad(
  http: SoakHttp,
  tally: Tally,
  reclaims: ReclaimWatch,
  spec: LoadSpec,
  log: (line: string) => void,
  progress?: ProgressLine,
): Promise<void> {
  const startMs = Date.now();
  const stopAt = startMs + spec.durationMs;
  progress?.set(() => loadText(startMs, spec, tally, reclaims));
  const prober = setInterval(() => void reclaims.probeDue(), PROBE_EVERY_MS);
  const progressLog = setInterval(() => {
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
    clearInterval(progressLog);
    progress?.stop();
  }
}
