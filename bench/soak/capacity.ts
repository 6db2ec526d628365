/**
 * The machine's capacity for the mix, measured in the same run before the load: open-loop arrivals
 * of the mix itself (the same kinds in the same shares: mixed.ts), stepped up until a step misses a
 * latency target of any kind or answers anything wrong, then one step between the last met rate and
 * the missed one. The capacity is the highest rate that met every target; the load and the overload
 * are sized from it, so the run means the same on an idle and on a loaded machine, and a kind that
 * holds a session or a container for seconds weighs what it holds, not what its arrival count says.
 * Each step also reports each kind's hold time and the occupancy they make by Little's law (arrival
 * rate x mean hold): the sessions and containers the mix holds at that rate, beside the pool's size.
 */
import type { LatencySummary } from '../protocol';
import { holdOp, MIX, MIX_KINDS, type MixKind } from './mixed';
import type { TallySummary } from './tally';
import { GAVE_UP_OUTCOME } from './verdicts';

/** The outcome a pool episode counts when the drain's bound cut it (episode.ts): not an end in time. */
export const CUT_OUTCOME = 'cut at the end of the drain';

/**
 * The targets each step must meet, one per kind and what it shares: every answer exact, and
 *  - a pool acquire's p99 under 2 s: no queue for sessions (one that grows makes it climb through
 *    an open-loop step);
 *  - a plain command's p99 (`execute: verify state`, a few builtins) under 1.5 s, and a timeout's
 *    overshoot under 1.5 s: the CPU is not starved (a starved machine delays both first);
 *  - each facade episode's p90 under its bound: several times its latency on an idle machine (an SDK
 *    sandbox ~1 s, a workspace ~0.5 s, a group sandbox ~3 s with its container and disk, a task ~5 s
 *    with its container, clone, daemon and two model calls), so a queue for containers or CPU shows.
 */
export const MIX_TARGETS: ReadonlyArray<{ op: string; at: 'p90' | 'p99'; maxMs: number }> = [
  { op: 'acquire', at: 'p99', maxMs: 2000 },
  { op: 'execute: verify state', at: 'p99', maxMs: 1500 },
  { op: 'timeout overshoot (latency - timeout)', at: 'p99', maxMs: 1500 },
  { op: 'sdk sandbox episode', at: 'p90', maxMs: 8000 },
  { op: 'workspace episode', at: 'p90', maxMs: 4000 },
  { op: 'group sandbox episode', at: 'p90', maxMs: 15_000 },
  { op: 'task episode', at: 'p90', maxMs: 25_000 },
];

export interface CapacityStep {
  rateHz: number;
  seconds: number;
  arrivals: number;
  errors: number;
  /** The targets it missed, each with its figure ("task episode p90 31000 ms > 25000"). */
  missed: string[];
  met: boolean;
  /** Each target's figure at this step (null: no sample of that kind in the step). */
  figures: Record<string, number | null>;
  /** Mean hold time of each kind's arrivals, ms. */
  holdMs: Partial<Record<MixKind, number>>;
  /** Little's law: arrivals/s of each kind x its mean hold, summed: what the mix holds at once. */
  occupancy: number;
  /** Acquires its clients gave up on (each may leave a lease to the idle reclaim). */
  acquiresGivenUp: number;
  /** The first few wrong answers (kind: example), to say why a step missed. */
  errorKinds: string[];
}

export interface Capacity {
  /** Arrivals/s of the mix at the highest step that met every target (the first step's if none did: see `met`). */
  rateHz: number;
  met: boolean;
  /** True when even the last step met the targets: the capacity is at least `rateHz`. */
  atLimit: boolean;
  steps: CapacityStep[];
}

export interface CapacityPlan {
  startHz: number;
  factor: number;
  maxSteps: number;
  /** When the first step misses, the search steps down by `factor` to this rate before it gives up. */
  minHz: number;
}

/** Judges one step of the mix from its tally. */
export function judgeStep(rateHz: number, seconds: number, arrivals: number, s: TallySummary): CapacityStep {
  const figures: Record<string, number | null> = {};
  const missed: string[] = [];
  for (const t of MIX_TARGETS) {
    const l: LatencySummary | undefined = s.latencyMs[t.op];
    const v = l && l.n > 0 ? l[t.at] : null;
    figures[`${t.op} ${t.at}`] = v;
    if (v !== null && v > t.maxMs) missed.push(`${t.op} ${t.at} ${v.toFixed(0)} ms > ${t.maxMs}`);
  }
  if (s.errorCount > 0) missed.push(`${s.errorCount} wrong answers`);
  const cut = s.outcomes[CUT_OUTCOME] ?? 0;
  if (cut > 0) missed.push(`${cut} episodes still open at the end of the drain`);
  const holdMs: Partial<Record<MixKind, number>> = {};
  let occupancy = 0;
  for (const kind of MIX_KINDS) {
    const l = s.latencyMs[holdOp(kind)];
    if (!l || l.n === 0) continue;
    holdMs[kind] = l.mean;
    occupancy += (l.n / seconds) * (l.mean / 1000);
  }
  return { rateHz, seconds, arrivals, errors: s.errorCount, acquiresGivenUp: s.outcomes[GAVE_UP_OUTCOME] ?? 0, missed, met: missed.length === 0, figures, holdMs, occupancy, errorKinds: Object.entries(s.errors).slice(0, 5).map(([kind, e]) => `${kind}: ${e.examples[0] ?? ''}`.slice(0, 300)) };
}

/**
 * Steps the rate up by `factor` from `startHz` until a step misses, then tries the geometric middle
 * of the last met and the missed rate; when the first step misses already (a slow or busy machine),
 * steps down instead until one meets. `step` runs the mix at a rate and judges it.
 */
export async function measureCapacity(plan: CapacityPlan, step: (rateHz: number, index: number) => Promise<CapacityStep>, log: (line: string) => void): Promise<Capacity> {
  const steps: CapacityStep[] = [];
  const run = async (rate: number): Promise<CapacityStep> => {
    const s = await step(rate, steps.length);
    steps.push(s);
    const holds = Object.entries(s.holdMs).map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)} s`).join(', ');
    log(`capacity step ${rate.toFixed(2)} arrivals/s: ${s.arrivals} arrivals, holds ${holds}, occupancy ${s.occupancy.toFixed(1)}: ${s.met ? 'met' : `missed (${s.missed.join('; ')})`}`);
    for (const e of s.errorKinds) log(`  wrong: ${e}`);
    return s;
  };
  let rate = plan.startHz;
  let lastMet: number | null = null;
  let missedAt: number | null = null;
  for (let i = 0; i < plan.maxSteps; i++) {
    if (!(await run(rate)).met) {
      missedAt = rate;
      break;
    }
    lastMet = rate;
    rate *= plan.factor;
  }
  for (let i = steps.length; lastMet === null && i < plan.maxSteps && rate / plan.factor >= plan.minHz; i++) {
    rate /= plan.factor;
    if ((await run(rate)).met) lastMet = rate;
    else missedAt = rate;
  }
  if (lastMet !== null && missedAt !== null) {
    const middle = Math.sqrt(lastMet * missedAt);
    if ((await run(middle)).met) lastMet = middle;
  }
  return { rateHz: lastMet ?? plan.startHz, met: lastMet !== null, atLimit: missedAt === null, steps };
}

/** The mix's shares, for the report. */
export const mixShares = (): string => MIX_KINDS.map((k) => `${k} ${Math.round(MIX[k] * 100)}%`).join(', ');
