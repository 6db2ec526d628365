/**
 * Counts and latency samples per wall-clock second for the last SECONDS_KEPT seconds: what the
 * dashboard draws as throughput and percentiles. Recording is a few array writes (it runs on the
 * execute path); series and percentiles are computed when a frame is built, once a second.
 */
export const SECONDS_KEPT = 60;
/** Latencies kept per second (a reservoir sample beyond it: percentiles stay fair under any load). */
const SAMPLES_PER_SECOND = 128;

export class SecondSeries {
  private readonly stamps = new Float64Array(SECONDS_KEPT).fill(-1);
  private readonly counts = new Float64Array(SECONDS_KEPT);
  private readonly flagged = new Float64Array(SECONDS_KEPT);
  private readonly maxima = new Float64Array(SECONDS_KEPT);
  private readonly seen = new Float64Array(SECONDS_KEPT);
  private readonly samples = new Float64Array(SECONDS_KEPT * SAMPLES_PER_SECOND);

  /** One event of `valueMs` at `nowMs`; `flag`: it counts among the failures too. */
  record(valueMs: number, flag: boolean, nowMs = Date.now()): void {
    const second = Math.floor(nowMs / 1000);
    const i = second % SECONDS_KEPT;
    if (this.stamps[i] !== second) {
      this.stamps[i] = second;
      this.counts[i] = this.flagged[i] = this.maxima[i] = this.seen[i] = 0;
    }
    this.counts[i]++;
    if (flag) this.flagged[i]++;
    if (valueMs > this.maxima[i]) this.maxima[i] = valueMs;
    const n = this.seen[i]++;
    const slot = n < SAMPLES_PER_SECOND ? n : Math.floor(Math.random() * (n + 1));
    if (slot < SAMPLES_PER_SECOND) this.samples[i * SAMPLES_PER_SECOND + slot] = valueMs;
  }

  /** The last `seconds` whole seconds before `nowMs`'s (the current one is still filling), oldest first. */
  series(nowMs = Date.now(), seconds = SECONDS_KEPT): { counts: number[]; flagged: number[]; maxMs: (number | null)[] } {
    const current = Math.floor(nowMs / 1000);
    const out = { counts: [] as number[], flagged: [] as number[], maxMs: [] as (number | null)[] };
    for (let s = current - Math.min(seconds, SECONDS_KEPT - 1); s < current; s++) {
      const i = s % SECONDS_KEPT;
      const live = this.stamps[i] === s;
      out.counts.push(live ? this.counts[i] : 0);
      out.flagged.push(live ? this.flagged[i] : 0);
      out.maxMs.push(live && this.counts[i] > 0 ? round(this.maxima[i]) : null);
    }
    return out;
  }

  /** Percentiles (0..1) of the samples of the last `seconds` (the current one included), or nulls. */
  percentiles(quantiles: readonly number[], seconds: number, nowMs = Date.now()): (number | null)[] {
    const current = Math.floor(nowMs / 1000);
    const values: number[] = [];
    for (let s = current - seconds + 1; s <= current; s++) {
      const i = s % SECONDS_KEPT;
      if (this.stamps[i] !== s) continue;
      const n = Math.min(this.seen[i], SAMPLES_PER_SECOND);
      for (let k = 0; k < n; k++) values.push(this.samples[i * SAMPLES_PER_SECOND + k]);
    }
    if (values.length === 0) return quantiles.map(() => null);
    values.sort((a, b) => a - b);
    return quantiles.map((q) => round(values[Math.min(values.length - 1, Math.floor(q * values.length))]));
  }
}

/** Milliseconds to the microsecond: enough for a display, and shorter frames. */
export function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
