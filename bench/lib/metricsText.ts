/** Just enough of the Prometheus text format to read a gauge and a histogram's quantiles. */

export function metricValue(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

export interface HistogramSummary {
  count: number;
  meanMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
}

function bucketCounts(text: string, name: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{[^}]*le="([^"]+)"[^}]*\\} ([0-9.eE+-]+)$`, 'gm'))) {
    const le = m[1] === '+Inf' ? Infinity : Number(m[1]);
    out.set(le, (out.get(le) ?? 0) + Number(m[2]));
  }
  return out;
}

/**
 * Quantiles as Prometheus's histogram_quantile computes them (linear inside the bucket), of what
 * was observed after `baseline` (an earlier scrape of the same broker) when one is given.
 */
export function histogram(text: string, name: string, baseline = ''): HistogramSummary {
  const before = bucketCounts(baseline, name);
  const observed = [...bucketCounts(text, name)].map(([le, count]) => ({ le, count: count - (before.get(le) ?? 0) })).sort((a, b) => a.le - b.le);
  const count = metricValue(text, `${name}_count`) - (baseline ? metricValue(baseline, `${name}_count`) : 0);
  const sum = metricValue(text, `${name}_sum`) - (baseline ? metricValue(baseline, `${name}_sum`) : 0);
  const quantile = (q: number): number => {
    if (!count) return NaN;
    const rank = q * count;
    let prevLe = 0;
    let prevCount = 0;
    for (const b of observed) {
      if (b.count >= rank) {
        if (b.le === Infinity) return prevLe * 1000;
        return (prevLe + ((b.le - prevLe) * (rank - prevCount)) / Math.max(1, b.count - prevCount)) * 1000;
      }
      prevLe = b.le;
      prevCount = b.count;
    }
    return NaN;
  };
  return { count, meanMs: count ? (sum / count) * 1000 : NaN, p50Ms: quantile(0.5), p90Ms: quantile(0.9), p99Ms: quantile(0.99) };
}
