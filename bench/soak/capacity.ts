/**
 * The machine's capacity for episodes, measured at the start of the run: open-loop arrivals of a
 * plain episode (acquire, 3 executes of `echo`, release), stepped up by half each step until a step
 * misses its latency targets. The capacity is the last rate that met them; the mixed load and the
 * overload are sized from it, so the run means the same on an idle and on a loaded machine.
 */
import type { SoakHttp } from './http';
import { openLoop } from './openLoop';
import { sleep, summarize } from '../lib/stats';

/**
 * A step above capacity queues acquires up to the broker's acquire timeout and beyond: once its
 * arrivals are over, what is still open after this long is cut (those episodes count as errors).
 */
const STEP_GRACE_MS = 20_000;
import type { LatencySummary } from '../protocol';

/**
 * The targets a step must meet. An episode of 5 requests on a pool with free sessions costs tens of
 * ms of CPU; p50 under 1 s and p99 under 3 s leave room for a loaded machine's scheduling noise but
 * not for a queue that grows (open-loop: a rate above capacity makes the latency climb through the
 * step, and its p99 with it). Every answer must be exact.
 */
export const CAPACITY_TARGETS = { p50Ms: 1000, p99Ms: 3000, errors: 0 };

export interface CapacityStep {
  rateHz: number;
  episodes: number;
  errors: number;
  latencyMs: LatencySummary;
  met: boolean;
}

export interface Capacity {
  /** Episodes/s of the last step that met the targets (the first step's rate if none did: see `met`). */
  rateHz: number;
  met: boolean;
  steps: CapacityStep[];
  targets: typeof CAPACITY_TARGETS;
}

export interface CapacityPlan {
  startHz: number;
  factor: number;
  stepS: number;
  maxSteps: number;
  seed: number;
}

async function plainEpisode(http: SoakHttp, token: string): Promise<void> {
  const a = await http.post('/session/acquire', {});
  const id = a.body?.session_id;
  if (a.status !== 200 || typeof id !== 'string') throw new Error(`acquire: HTTP ${a.status}`);
  let wrong: string | null = null;
  for (let i = 1; i <= 3 && !wrong; i++) {
    const e = await http.post(`/session/${id}/execute`, { command: `echo ${token}-${i}`, timeout: 30 });
    if (e.status !== 200 || e.body?.stdout !== `${token}-${i}\n` || e.body?.return_code !== 0) wrong = `execute: HTTP ${e.status} ${JSON.stringify(e.body).slice(0, 200)}`;
  }
  const r = await http.post(`/session/${id}/release`, {});
  if (wrong) throw new Error(wrong);
  if (r.status !== 200) throw new Error(`release: HTTP ${r.status}`);
}

export async function measureCapacity(http: SoakHttp, plan: CapacityPlan, log: (line: string) => void): Promise<Capacity> {
  const steps: CapacityStep[] = [];
  let rate = plan.startHz;
  for (let s = 0; s < plan.maxSteps; s++) {
    const latencies: number[] = [];
    let errors = 0;
    const arrivals = openLoop(rate, plan.stepS * 1000, plan.seed + s, async (i) => {
      const t0 = performance.now();
      try {
        await plainEpisode(http, `c${s}x${i}`);
        latencies.push(performance.now() - t0);
      } catch {
        errors++;
      }
    });
    const ended = await Promise.race([arrivals.then(() => true), sleep(plan.stepS * 1000 + STEP_GRACE_MS).then(() => false)]);
    if (!ended) http.cutAll();
    const episodes = await arrivals;
    const latencyMs = summarize(latencies);
    const met = errors <= CAPACITY_TARGETS.errors && latencyMs.p50 <= CAPACITY_TARGETS.p50Ms && latencyMs.p99 <= CAPACITY_TARGETS.p99Ms;
    steps.push({ rateHz: rate, episodes, errors, latencyMs, met });
    log(`capacity step ${rate.toFixed(1)} episodes/s: ${episodes} episodes, p50 ${latencyMs.p50.toFixed(0)} ms, p99 ${latencyMs.p99.toFixed(0)} ms, ${errors} errors: ${met ? 'met' : 'missed'}`);
    if (!met) break;
    rate *= plan.factor;
  }
  const passed = steps.filter((s) => s.met);
  return { rateHz: passed.length ? passed[passed.length - 1].rateHz : plan.startHz, met: passed.length > 0, steps, targets: CAPACITY_TARGETS };
}
