/**
 * The two ways every figure is driven, whatever the target (broker, no-op HTTP, raw bash): one
 * operation after another, or N closed-loop workers measured over a window after a ramp.
 */
import { setMaxListeners } from 'node:events';
import type { ConcResult, SeqResult } from '../protocol';
import { nowMs, sleep, summarize } from '../lib/stats';

/** One operation; it throws when the answer is wrong. The signal fires when the run is over. */
export type Op<D = void> = (signal: AbortSignal) => Promise<D>;

export async function runSequential(op: Op, n: number, warmup: number, maxMs: number): Promise<SeqResult> {
  const never = new AbortController().signal;
  const deadline = nowMs() + maxMs;
  let errors = 0;
  for (let i = 0; i < warmup && nowMs() < deadline; i++) await op(never).catch(() => errors++);
  const samples: number[] = [];
  const started = nowMs();
  while (samples.length < n && nowMs() < deadline) {
    const t0 = nowMs();
    try {
      await op(never);
      samples.push(nowMs() - t0);
    } catch {
      errors++;
    }
  }
  const elapsed = nowMs() - started;
  return { latency: summarize(samples), opsPerSec: (samples.length / elapsed) * 1000, errors };
}

/**
 * The targets in turn, a block of `BLOCK` operations each, until each has `n` samples: the paths see
 * the same noisy neighbours (blocks last milliseconds), and each is measured hot, as in a plain loop
 * (the first operation of a block, after the others ran, is not counted).
 */
const BLOCK = 25;

export async function runInterleaved(ops: Op[], n: number, warmup: number, maxMs: number): Promise<SeqResult[]> {
  const never = new AbortController().signal;
  const deadline = nowMs() + maxMs;
  const samples = ops.map((): number[] => []);
  const errors = ops.map(() => 0);
  const timed = async (i: number, keep: boolean): Promise<void> => {
    const t0 = nowMs();
    try {
      await ops[i](never);
      if (keep) samples[i].push(nowMs() - t0);
    } catch {
      errors[i]++;
    }
  };
  for (let i = 0; i < ops.length; i++) for (let w = 0; w < warmup; w++) await timed(i, false);
  while (samples.some((s) => s.length < n) && nowMs() < deadline) {
    for (let i = 0; i < ops.length; i++) {
      await timed(i, false);
      for (let k = 0; k < BLOCK && samples[i].length < n; k++) await timed(i, true);
    }
  }
  return samples.map((s, i) => {
    const latency = summarize(s);
    return { latency, opsPerSec: 1000 / latency.mean, errors: errors[i] };
  });
}

export interface LoopOptions {
  rampMs: number;
  durationMs: number;
  /** After the window, how long workers may take to finish what they started. */
  drainMs: number;
}

export interface LoopResult<D> extends ConcResult {
  /** What the operations returned, for those counted (none for operations that return nothing). */
  details: D[];
}

export async function runClosedLoop<D>(ops: Op<D>[], options: LoopOptions): Promise<LoopResult<D>> {
  const stop = new AbortController();
  setMaxListeners(ops.length + 16, stop.signal); // every worker's request listens to it
  const start = nowMs();
  const windowStart = start + options.rampMs;
  const windowEnd = windowStart + options.durationMs;
  const samples: number[] = [];
  const details: D[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const worker = async (op: Op<D>): Promise<void> => {
    while (!stop.signal.aborted) {
      const t0 = nowMs();
      try {
        const detail = await op(stop.signal);
        const t1 = nowMs();
        if (t1 >= windowStart && t1 <= windowEnd) {
          samples.push(t1 - t0);
          if (detail !== undefined) details.push(detail);
        }
      } catch (err) {
        if (stop.signal.aborted) return; // cut short by the end of the run, not a failure
        errors++;
        firstError ??= (err as Error).message;
        await sleep(10); // a broken target must not spin the loop
      }
    }
  };
  const workers = Promise.all(ops.map(worker));
  await sleep(options.rampMs + options.durationMs);
  stop.abort();
  const drained = await Promise.race([workers.then(() => true), sleep(options.drainMs).then(() => false)]);
  if (!drained) {
    errors++;
    firstError ??= `workers did not finish within ${options.drainMs} ms after the window`;
  }
  const windowMs = windowEnd - windowStart;
  return {
    concurrency: ops.length,
    windowMs,
    completed: samples.length,
    opsPerSec: (samples.length / windowMs) * 1000,
    latency: summarize(samples),
    errors,
    firstError,
    details,
  };
}
