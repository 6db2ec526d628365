/**
 * results/<backend>-latest.svg: episode latency (p50, p99; log scale, left) and throughput (bars,
 * right) against concurrency. Hand-written SVG: one chart with two axes is ~100 lines, needs no
 * dependency, renders the same on GitHub and in a browser, and diffs cleanly between runs.
 */
import type { Results } from './results';

const W = 760;
const H = 460;
const M = { left: 72, right: 78, top: 80, bottom: 64 };
const PW = W - M.left - M.right;
const PH = H - M.top - M.bottom;

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const text = (x: number, y: number, s: string, attrs = ''): string => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`;

/** 1-2-5 ticks covering [lo, hi] on a log scale. */
function logTicks(lo: number, hi: number): number[] {
  const ticks: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo / 1.0001 && v <= hi * 1.0001) ticks.push(v);
    }
  }
  return ticks;
}

function niceMax(v: number): number {
  const p = 10 ** Math.floor(Math.log10(Math.max(v, 1e-9)));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((c) => c >= v) ?? 10 * p;
}

const tick = (v: number): string => String(Number(v.toPrecision(3)));
const fmt = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toPrecision(2));

export function renderChart(r: Results): string {
  const eps = [...r.episodes].sort((a, b) => a.concurrency - b.concurrency);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    text(W / 2, 24, `Episodes vs concurrency: ${r.backend} backend (${r.machine.cores} cores, ${r.startedAt.slice(0, 10)})`, 'text-anchor="middle" font-size="15" font-weight="bold"'),
    text(W / 2, 42, 'acquire + 5 x echo + release; pool = ceil(C/8) x 8 sessions, a broker per size', 'text-anchor="middle" fill="#555"'),
  ];
  if (!eps.length) return [...out, text(W / 2, H / 2, 'no episode figures in this run', 'text-anchor="middle"'), '</svg>'].join('\n');
  const lats = eps.flatMap((e) => [e.result.latency.p50, e.result.latency.p99]).filter((v) => v > 0 && Number.isFinite(v));
  const lo = 10 ** Math.floor(Math.log10(Math.min(...lats)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...lats)));
  const thrMax = niceMax(Math.max(...eps.map((e) => e.result.opsPerSec)) * 1.1);
  const x = (i: number): number => M.left + (PW * (i + 0.5)) / eps.length;
  const yLat = (v: number): number => M.top + PH - (PH * Math.log10(v / lo)) / Math.log10(hi / lo);
  const yThr = (v: number): number => M.top + PH - (PH * v) / thrMax;
  const barW = Math.min(56, (PW / eps.length) * 0.45);

  for (const t of logTicks(lo, hi)) {
    out.push(`<line x1="${M.left}" x2="${M.left + PW}" y1="${yLat(t).toFixed(1)}" y2="${yLat(t).toFixed(1)}" stroke="#e5e5e5"/>`);
    out.push(text(M.left - 6, yLat(t) + 4, tick(t), 'text-anchor="end"'));
  }
  for (let i = 0; i <= 5; i++) out.push(text(M.left + PW + 6, yThr((thrMax * i) / 5) + 4, tick((thrMax * i) / 5), 'fill="#3a7d44"'));
  eps.forEach((e, i) => {
    const y = yThr(e.result.opsPerSec);
    out.push(`<rect x="${(x(i) - barW / 2).toFixed(1)}" y="${y.toFixed(1)}" width="${barW.toFixed(1)}" height="${(M.top + PH - y).toFixed(1)}" fill="#9fd3a8"/>`);
    out.push(text(x(i), y - 4, fmt(e.result.opsPerSec), 'text-anchor="middle" fill="#3a7d44" font-size="11"'));
    out.push(text(x(i), M.top + PH + 18, String(e.concurrency), 'text-anchor="middle"'));
  });
  for (const [key, color] of [['p50', '#1f5fbf'], ['p99', '#d9661f']] as const) {
    const pts = eps.map((e, i) => `${x(i).toFixed(1)},${yLat(e.result.latency[key]).toFixed(1)}`);
    out.push(`<polyline points="${pts.join(' ')}" fill="none" stroke="${color}" stroke-width="2"/>`);
    eps.forEach((e, i) => out.push(`<circle cx="${x(i).toFixed(1)}" cy="${yLat(e.result.latency[key]).toFixed(1)}" r="3.5" fill="${color}"/>`));
  }
  out.push(`<rect x="${M.left}" y="${M.top}" width="${PW}" height="${PH}" fill="none" stroke="#888"/>`);
  out.push(text(M.left + PW / 2, H - 22, 'concurrent episodes (C)', 'text-anchor="middle"'));
  out.push(text(18, M.top + PH / 2, 'episode latency, ms (log)', `text-anchor="middle" transform="rotate(-90 18 ${M.top + PH / 2})"`));
  out.push(text(W - 16, M.top + PH / 2, 'episodes / s', `text-anchor="middle" fill="#3a7d44" transform="rotate(90 ${W - 16} ${M.top + PH / 2})"`));
  const legend = [['#1f5fbf', 'p50 latency'], ['#d9661f', 'p99 latency'], ['#9fd3a8', 'throughput']];
  legend.forEach(([color, label], i) => {
    const lx = M.left + 10 + i * 120;
    out.push(`<rect x="${lx}" y="${M.top - 22}" width="14" height="10" fill="${color}"/>`, text(lx + 20, M.top - 13, label));
  });
  return [...out, '</svg>'].join('\n');
}
