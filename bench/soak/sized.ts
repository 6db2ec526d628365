/**
 * The sized run: capacity first, the mix at 70% of it (the load the checks judge), the overload at
 * 150% (reported apart: only clear deviations), and a recovery step at 50% that must be exact.
 */
import { measureCapacity, type Capacity, type CapacityStep } from './capacity';
import type { EpisodeOptions } from './episode';
import type { FacadeCtx } from './facades';
import type { SoakHttp } from './http';
import { OverloadTally, runMixed } from './mixed';
import type { SoakPlan } from './plan';
import type { ReclaimWatch } from './reclaimWatch';
import type { Check } from './report';
import type { Tally, TallySummary } from './tally';
import { nowMs, sleep } from '../lib/stats';

/**
 * After a phase's arrivals stop, its episodes may finish for `drainS`; what is still open then is cut
 * (an episode cut there counts as 'cut at the end of the drain'), so every phase ends.
 */
async function drained(http: SoakHttp, arrivals: Promise<number>, durationS: number, drainS: number, log: (line: string) => void): Promise<number> {
  const ended = await Promise.race([arrivals.then(() => true), sleep((durationS + drainS) * 1000).then(() => false)]);
  if (!ended) {
    log('drain bound reached: cutting the requests still open');
    http.cutAll();
  }
  return arrivals;
}

export const LOAD_SHARE = 0.7;
export const OVERLOAD_SHARE = 1.5;
const RECOVERY_SHARE = 0.5;
/**
 * A pool episode of the mix costs about twice a plain one: ~9 requests against 5 (a check on the
 * fresh lease, 1-8 steps of 1-3 requests each, floods of up to 3 MiB), and its timeouts hold the
 * session for up to 2 s. Its arrivals are counted at that weight, so "70% of capacity" means 70% of
 * the plain episodes' work, not 70% of their count.
 */
export const MIX_COST = 2;

export interface SizedResults {
  capacity: Capacity;
  loadRateHz: number;
  arrivals: number;
  overload: { rateHz: number; arrivals: number; seconds: number; tally: TallySummary };
  recovery: CapacityStep;
}

export async function runSized(
  plan: SoakPlan,
  http: SoakHttp,
  tally: Tally,
  reclaims: ReclaimWatch,
  facade: FacadeCtx,
  episode: EpisodeOptions,
  marks: { loadStarted: () => void; loadS: number },
  log: (line: string) => void,
): Promise<SizedResults> {
  const capacity = await measureCapacity(http, { startHz: 1, factor: 1.5, stepS: plan.capacityStepS, maxSteps: 14, seed: plan.seed }, log);
  log(`capacity: ${capacity.rateHz.toFixed(1)} episodes/s${capacity.met ? '' : ' (no step met the targets)'}`);
  const loadRateHz = (LOAD_SHARE * capacity.rateHz) / MIX_COST;
  const prober = setInterval(() => void reclaims.probeDue(), 1000);
  try {
    marks.loadStarted();
    const t0 = nowMs();
    log(`mixed load: ${loadRateHz.toFixed(1)} arrivals/s for ${plan.durationS} s`);
    const mixed = runMixed(http, tally, reclaims, facade, { rateHz: loadRateHz, durationMs: plan.durationS * 1000, seed: plan.seed, episode, warmSlots: plan.warmSlots });
    const arrivals = await drained(http, mixed, plan.durationS, plan.drainS, log);
    marks.loadS = (nowMs() - t0) / 1000;
    log(`mixed load done: ${arrivals} arrivals, ${tally.errorCount} unexpected`);

    const over = new OverloadTally();
    const rateHz = (OVERLOAD_SHARE * capacity.rateHz) / MIX_COST;
    const t1 = nowMs();
    log(`overload: ${rateHz.toFixed(1)} arrivals/s for ${plan.overloadS} s`);
    const overMix = runMixed(http, over, reclaims, { ...facade, tally: over }, { rateHz, durationMs: plan.overloadS * 1000, seed: plan.seed + 1, episode, warmSlots: plan.warmSlots });
    const overArrivals = await drained(http, overMix, plan.overloadS, plan.drainS, log);
    const overload = { rateHz, arrivals: overArrivals, seconds: (nowMs() - t1) / 1000, tally: over.summary() };
    log(`overload done: ${overArrivals} arrivals, ${over.errorCount} deviations that are not clear`);

    const recovered = await measureCapacity(http, { startHz: RECOVERY_SHARE * capacity.rateHz, factor: 1, stepS: plan.recoveryS, maxSteps: 1, seed: plan.seed + 2 }, log);
    return { capacity, loadRateHz, arrivals, overload, recovery: recovered.steps[0] };
  } finally {
    clearInterval(prober);
  }
}

export function sizedChecks(s: SizedResults): Check[] {
  const t = s.capacity.targets;
  return [
    {
      name: 'capacity measured',
      pass: s.capacity.met,
      detail: `${s.capacity.rateHz.toFixed(1)} episodes/s (open loop; targets p50 <= ${t.p50Ms} ms, p99 <= ${t.p99Ms} ms, ${t.errors} errors); mix at ${s.loadRateHz.toFixed(1)}/s`,
    },
    {
      name: 'overload: only clear deviations, nothing lost',
      pass: s.overload.tally.errorCount === 0,
      detail: `${s.overload.arrivals} arrivals at ${s.overload.rateHz.toFixed(1)}/s, every one ended; ${s.overload.tally.errorCount} other deviations`,
    },
    {
      name: 'recovered after the overload',
      pass: s.recovery.met,
      detail: `${s.recovery.episodes} plain episodes at ${s.recovery.rateHz.toFixed(1)}/s: p50 ${s.recovery.latencyMs.p50.toFixed(0)} ms, p99 ${s.recovery.latencyMs.p99.toFixed(0)} ms, ${s.recovery.errors} errors`,
    },
  ];
}
