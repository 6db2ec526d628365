/**
 * The sized run: the mix's capacity first (capacity.ts), the mix at 70% of it (the load the checks
 * judge), the overload at 150% (reported apart: only clear deviations, every arrival ended), and a
 * recovery step at 50% that must meet every target again.
 */
import { CUT_OUTCOME, judgeStep, measureCapacity, type Capacity, type CapacityPlan, type CapacityStep } from './capacity';
import type { EpisodeOptions } from './episode';
import type { FacadeCtx } from './facades';
import type { SoakHttp } from './http';
import { OverloadTally, runMixed } from './mixed';
import type { SoakPlan } from './plan';
import type { ReclaimWatch } from './reclaimWatch';
import type { Check } from './report';
import { GAVE_UP_OUTCOME } from './verdicts';
import { Tally, type TallySummary } from './tally';
import { nowMs, sleep } from '../lib/stats';

export const LOAD_SHARE = 0.7;
export const OVERLOAD_SHARE = 1.5;
const RECOVERY_SHARE = 0.5;
/**
 * The search: from 0.5 arrivals/s of the mix, each step 1.5 times the last; 0.5 x 1.5^11 = 43/s is
 * far above what a 2-core machine holds of the mix. Down to 0.05/s when the first step misses.
 */
const CAPACITY_SEARCH: CapacityPlan = { startHz: 0.5, factor: 1.5, maxSteps: 12, minHz: 0.05 };
/**
 * A step's open episodes may finish for this long after its arrivals; then they are cut (and count
 * as wrong answers: the step missed). Above a task's longest legitimate episode on a loaded machine.
 */
const STEP_GRACE_S = 60;
/** Between steps: the abandoned leases and the warm pool's refills of one step are not the next one's load. */
const STEP_PAUSE_MS = 5000;

/**
 * After a phase's arrivals stop, its episodes may finish for `drainS`; what is still open then is cut
 * (an episode cut there counts as a wrong answer), so every phase ends.
 */
async function drained(http: SoakHttp, arrivals: Promise<number>, durationS: number, drainS: number, log: (line: string) => void): Promise<number> {
  const ended = await Promise.race([arrivals.then(() => true), sleep((durationS + drainS) * 1000).then(() => false)]);
  if (!ended) {
    log('drain bound reached: cutting the requests still open');
    http.cutAll();
  }
  return arrivals;
}

export interface SizedResults {
  capacity: Capacity;
  loadRateHz: number;
  arrivals: number;
  /** Little's law at the load: what the mix held at once, from its own hold times. */
  loadOccupancy: number;
  /** Pool episodes of the load still open at the end of its drain (cut). */
  loadCut: number;
  overload: { rateHz: number; arrivals: number; seconds: number; tally: TallySummary };
  recovery: CapacityStep;
}

export interface SizedParts {
  plan: SoakPlan;
  http: SoakHttp;
  tally: Tally;
  reclaims: ReclaimWatch;
  facade: FacadeCtx;
  episode: EpisodeOptions;
  marks: { loadStarted: () => void; loadS: number };
  log: (line: string) => void;
}

/** What a phase of the mix needs besides its rate and length. */
export interface MixParts {
  http: SoakHttp;
  reclaims: ReclaimWatch;
  facade: FacadeCtx;
  episode: EpisodeOptions;
  log: (line: string) => void;
}

/** A phase of the mix into `tally`, its drain bounded by `drainS`; resolves with its arrivals once every one ended. */
export function runPhase(m: MixParts, tally: Tally, spec: { rateHz: number; seconds: number; drainS: number; seed: number; everyKindFirst?: boolean }): Promise<number> {
  const mixed = runMixed(m.http, tally, m.reclaims, m.facade, { rateHz: spec.rateHz, durationMs: spec.seconds * 1000, seed: spec.seed, episode: m.episode, everyKindFirst: spec.everyKindFirst });
  return drained(m.http, mixed, spec.seconds, spec.drainS, m.log);
}

/** One judged step of the mix at `rateHz` for `seconds`, into a tally of its own. */
export async function mixStep(m: MixParts, rateHz: number, seconds: number, seed: number): Promise<CapacityStep> {
  const tally = new Tally();
  const arrivals = await runPhase(m, tally, { rateHz, seconds, drainS: STEP_GRACE_S, seed });
  await sleep(STEP_PAUSE_MS);
  return judgeStep(rateHz, seconds, arrivals, tally.summary());
}

/** The mix's capacity on this machine now (capacity.ts), steps of `stepS`. */
export function sizeTheMix(m: MixParts, stepS: number, seed: number, plan: CapacityPlan = CAPACITY_SEARCH): Promise<Capacity> {
  return measureCapacity(plan, (rate, i) => mixStep(m, rate, stepS, seed + 100 + i), m.log);
}

export async function runSized(p: SizedParts): Promise<SizedResults> {
  const { plan, http, reclaims, log } = p;
  const m: MixParts = { http, reclaims, facade: p.facade, episode: p.episode, log };
  const prober = setInterval(() => void reclaims.probeDue(), 1000);
  try {
    const capacity = await sizeTheMix(m, plan.capacityStepS, plan.seed);
    log(`capacity: ${capacity.rateHz.toFixed(2)} arrivals/s of the mix${capacity.met ? '' : ' (no step met the targets)'}${capacity.atLimit ? ' (the last step still met them: at least that)' : ''}`);
    const loadRateHz = LOAD_SHARE * capacity.rateHz;

    p.marks.loadStarted();
    const t0 = nowMs();
    log(`mixed load: ${loadRateHz.toFixed(2)} arrivals/s for ${plan.durationS} s`);
    const progress = setInterval(() => log(`  ${p.tally.outcome('episodes ended')} pool episodes ended, ${p.tally.errorCount} unexpected`), 60_000);
    const arrivals = await runPhase(m, p.tally, { rateHz: loadRateHz, seconds: plan.durationS, drainS: plan.drainS, seed: plan.seed }).finally(() => clearInterval(progress));
    p.marks.loadS = (nowMs() - t0) / 1000;
    const loadOccupancy = judgeStep(loadRateHz, plan.durationS, arrivals, p.tally.summary()).occupancy;
    log(`mixed load done: ${arrivals} arrivals, ${p.tally.errorCount} unexpected, occupancy ${loadOccupancy.toFixed(1)}`);

    const over = new OverloadTally();
    const rateHz = OVERLOAD_SHARE * capacity.rateHz;
    const t1 = nowMs();
    log(`overload: ${rateHz.toFixed(2)} arrivals/s for ${plan.overloadS} s`);
    // Overload queues acquires up to the broker's acquire timeout: the drain waits that long and more.
    const overArrivals = await runPhase({ ...m, facade: { ...p.facade, tally: over } }, over, { rateHz, seconds: plan.overloadS, drainS: plan.broker.acquireTimeoutS + plan.drainS, seed: plan.seed + 1 });
    const overload = { rateHz, arrivals: overArrivals, seconds: (nowMs() - t1) / 1000, tally: over.summary() };
    log(`overload done: ${overArrivals} arrivals, ${over.errorCount} deviations that are not clear`);

    await sleep(STEP_PAUSE_MS);
    const recovery = await mixStep(m, RECOVERY_SHARE * capacity.rateHz, plan.recoveryS, plan.seed + 2);
    log(`recovery at ${recovery.rateHz.toFixed(2)}/s: ${recovery.met ? 'met' : `missed (${recovery.missed.join('; ')})`}`);
    return { capacity, loadRateHz, arrivals, loadOccupancy, loadCut: p.tally.outcome(CUT_OUTCOME), overload, recovery };
  } finally {
    clearInterval(prober);
  }
}

/** Acquires given up outside the load's tally: the capacity steps', the overload's, the recovery's. */
export function gaveUpOutsideTheLoad(s: SizedResults): number {
  return [...s.capacity.steps, s.recovery].reduce((n, x) => n + x.acquiresGivenUp, 0) + (s.overload.tally.outcomes[GAVE_UP_OUTCOME] ?? 0);
}

export function sizedChecks(s: SizedResults): Check[] {
  return [
    {
      name: 'capacity measured',
      pass: s.capacity.met && !s.capacity.atLimit,
      detail: `${s.capacity.rateHz.toFixed(2)} arrivals/s of the mix (open loop, every kind within its targets${s.capacity.atLimit ? '; no step missed: the search stopped below the capacity' : ''}); the load at ${s.loadRateHz.toFixed(2)}/s`,
    },
    {
      name: 'the load: every episode ended in its drain',
      pass: s.loadCut === 0,
      detail: `${s.arrivals} arrivals at ${s.loadRateHz.toFixed(2)}/s; ${s.loadCut} pool episodes cut at the end of the drain`,
    },
    {
      name: 'overload: only clear deviations, nothing lost',
      pass: s.overload.tally.errorCount === 0 && (s.overload.tally.outcomes[CUT_OUTCOME] ?? 0) === 0,
      detail: `${s.overload.arrivals} arrivals at ${s.overload.rateHz.toFixed(2)}/s; ${s.overload.tally.outcomes[CUT_OUTCOME] ?? 0} cut at the end of the drain; ${s.overload.tally.errorCount} other deviations`,
    },
    {
      name: 'recovered after the overload',
      pass: s.recovery.met,
      detail: `${s.recovery.arrivals} arrivals of the mix at ${s.recovery.rateHz.toFixed(2)}/s: ${s.recovery.met ? 'every target met' : s.recovery.missed.join('; ')}`,
    },
  ];
}
