import type { LatencySummary } from '../protocol';

/** Nearest-rank percentiles over latencies in ms (the samples are sorted in place). */
export function summarize(samples: number[]): LatencySummary {
  const n = samples.length;
  if (n === 0) return { n: 0, p50: NaN, p90: NaN, p99: NaN, mean: NaN, max: NaN };
  samples.sort((a, b) => a - b);
  const at = (q: number): number => samples[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))];
  let sum = 0;
  for (const s of samples) sum += s;
  return { n, p50: at(0.5), p90: at(0.9), p99: at(0.99), mean: sum / n, max: samples[n - 1] };
}

/** The median (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const v = [...values].sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

export function nowMs(): number {
  return performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `task` over `items` with at most `limit` at once; results keep the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
