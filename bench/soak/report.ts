/** The soak's results: JSON as measured, and the markdown summary printed and written beside it. */
import fs from 'node:fs';
import path from 'node:path';
import type { Machine } from '../lib/machine';
import { median } from '../lib/stats';
import type { SoakPlan } from './plan';
import type { Sample, MemoryVerdict } from './monitor';
import type { TallySummary } from './tally';
import type { SizedResults } from './sized';
import { sizedSection } from './sizedReport';

export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

export interface SoakResults {
  plan: SoakPlan;
  machine: Machine;
  startedAt: string;
  warmUpMs: number;
  loadS: number;
  totalS: number;
  episodes: number;
  executes: number;
  tally: TallySummary;
  memory: MemoryVerdict;
  fds: { idleWarm: number; settled: number; idleWarmKinds: Record<string, number>; settledKinds: Record<string, number> };
  health: { minAvailable: number; maxBroken: number; maxUnhealthyContainers: number; notHealthySamples: number; samples: number };
  /** Share of the load's wall time in which some runnable task waited for a CPU (PSI); null without PSI. */
  cpuPressure: number | null;
  /** The broker's own counters at the end (/metrics), by label set. */
  brokerCounters: Record<string, Record<string, number>>;
  reclaims: { abandoned: number; verified: number };
  settleMs: number;
  stop: { stopMs: number; killed: boolean };
  checks: Check[];
  samples: Sample[];
  /** The sized run's capacity steps and overload phase (absent with --closed). */
  sized?: SizedResults;
}

const MB = 1e6;
export const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '-');
const mb = (b: number): string => `${f1(b / MB)} MB`;

function latencyTable(r: SoakResults): string[] {
  const rows = ['| operation | n | p50 ms | p90 ms | p99 ms | max ms |', '| --- | ---: | ---: | ---: | ---: | ---: |'];
  for (const [op, l] of Object.entries(r.tally.latencyMs)) {
    rows.push(`| ${op} | ${l.n} | ${f1(l.p50)} | ${f1(l.p90)} | ${f1(l.p99)} | ${f1(l.max)} |`);
  }
  return rows;
}

export function countTable(title: string, counts: Record<string, number>): string[] {
  const entries = Object.entries(counts);
  if (entries.length === 0) return [`${title}: none.`];
  return [`| ${title} | count |`, '| --- | ---: |', ...entries.map(([k, v]) => `| ${k.replace(/\|/g, '\\|')} | ${v} |`)];
}

/**
 * How starved the machine was during the load. A timeout answer to a plain command is what the
 * broker owes when the command really did not finish in time; this line tells whether the machine
 * let it.
 */
function cpuLine(r: SoakResults): string {
  const during = r.samples.filter((s) => s.tS >= 0 && s.tS <= r.loadS && s.runnable !== undefined).map((s) => s.runnable as number);
  const runnable = during.length ? `runnable tasks median ${Math.round(median(during))}, max ${Math.max(...during)} (/proc/loadavg, on ${r.machine.cores} cores)` : 'runnable tasks not sampled';
  const pressure = r.cpuPressure === null ? 'no CPU pressure figures (no /proc/pressure/cpu)' : `some task waited for a CPU ${Math.round(r.cpuPressure * 100)}% of the time (/proc/pressure/cpu)`;
  return `CPU during the load: ${pressure}; ${runnable}.`;
}

export function renderMarkdown(r: SoakResults): string {
  const p = r.plan;
  const m = r.machine;
  const errors = Object.fromEntries(Object.entries(r.tally.errors).map(([k, v]) => [k, v.count]));
  const examples = Object.entries(r.tally.errors).flatMap(([k, v]) => v.examples.map((e) => `- ${k}: \`${e.replace(/`/g, "'")}\``));
  const counters = Object.entries(r.brokerCounters).map(([name, byLabel]) => `- ${name}: ${Object.entries(byLabel).map(([l, v]) => `${l || '(total)'} ${v}`).join(', ')}`);
  return [
    `# Soak (${p.quick ? 'quick' : 'full'}): ${r.checks.every((c) => c.pass) ? 'PASS' : 'FAIL'}`,
    '',
    `${r.startedAt}, ${m.gitCommit}${m.gitDirty ? ' (src/ modified)' : ''}. ${m.cores} x ${m.cpuModel}, ${m.ramGiB} GiB, ${m.kernel}, Node ${m.node}, Docker ${m.docker}; load average at start ${m.loadAvgAtStart.join(' / ')}.`,
    `Command: \`${p.command}\`.`,
    `Docker backend, ${p.containers} x ${p.perContainer} sessions, ${p.sized ? `open loop sized from the capacity (${p.warmSlots} warm sandboxes), the mix` : `${p.clients} clients`} for ${r.loadS.toFixed(0)} s (seed ${p.seed}), fork bursts ${p.forkBurst ? 'on' : 'off'}; BROKER_MAX_OUTPUT_BYTES=${p.broker.maxOutputBytes}, ` +
      `BROKER_SESSION_IDLE_TIMEOUT=${p.broker.idleTimeoutS}, BROKER_CONTAINER_PIDS_LIMIT=${p.broker.pidsLimit}, BROKER_CONTAINER_MEMORY=${p.broker.memory}${Object.entries(p.broker.extra).map(([k, v]) => `, ${k}=${v}`).join("")}. ` +
      `Warm-up ${(r.warmUpMs / 1000).toFixed(1)} s; whole run ${r.totalS.toFixed(0)} s.`,
    '',
    '## Checks',
    '',
    '| check | result | detail |',
    '| --- | --- | --- |',
    ...r.checks.map((c) => `| ${c.name} | ${c.pass ? 'PASS' : '**FAIL**'} | ${c.detail.replace(/\|/g, '\\|')} |`),
    '',
    '## Load',
    '',
    `${r.episodes} episodes, ${r.executes} executes (${f1(r.episodes / r.loadS)} episodes/s, ${f1(r.executes / r.loadS)} executes/s), ${r.tally.errorCount} unexpected answers.`,
    cpuLine(r),
    `Abandoned leases: ${r.reclaims.abandoned}, each seen reclaimed: ${r.reclaims.verified}. Pool settled ${f1(r.settleMs / 1000)} s after the load stopped; broker stopped in ${f1(r.stop.stopMs / 1000)} s${r.stop.killed ? ' (SIGKILLed)' : ''}.`,
    '',
    ...latencyTable(r),
    '',
    ...countTable('expected outcome', r.tally.outcomes),
    '',
    ...countTable('unexpected answer (error) by kind', errors),
    ...(examples.length ? ['', 'First examples:', '', ...examples] : []),
    '',
    ...sizedSection(r),
    '## Broker',
    '',
    `RSS: idle warm ${mb(r.memory.rssIdleWarmBytes)}; median of the second third of the load ${mb(r.memory.rssMedianSecondThirdBytes)}, of the last third ${mb(r.memory.rssMedianLastThirdBytes)} ` +
      `(growth ${mb(r.memory.growthBytes)}, bound ${mb(r.memory.boundBytes)}); peak ${mb(r.memory.rssPeakBytes)}. V8 heap used, medians: ${mb(r.memory.heapMedianSecondThirdBytes)} -> ${mb(r.memory.heapMedianLastThirdBytes)}.`,
    `Open fds: ${r.fds.idleWarm} idle warm ${JSON.stringify(r.fds.idleWarmKinds)}, ${r.fds.settled} settled after the load ${JSON.stringify(r.fds.settledKinds)}. /health over ${r.health.samples} samples: min available ${r.health.minAvailable}, ` +
      `max broken ${r.health.maxBroken}, max unhealthy containers ${r.health.maxUnhealthyContainers}, ${r.health.notHealthySamples} samples not "healthy" (busy pools report degraded while slots are rebuilt).`,
    '',
    'Broker counters at the end (/metrics):',
    '',
    ...counters,
    '',
  ].join('\n');
}

export function writeResults(r: SoakResults): string {
  const base = path.join(r.plan.outDir, r.plan.quick ? 'soak-quick' : 'soak-latest');
  fs.mkdirSync(r.plan.outDir, { recursive: true });
  fs.writeFileSync(`${base}.json`, JSON.stringify(r, null, 1) + '\n');
  fs.writeFileSync(`${base}.md`, renderMarkdown(r));
  return base;
}

/** Every sample of `name` in Prometheus text, by label set ('' when it has none). */
export function countersByLabel(text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? ([0-9.eE+-]+)$`, 'gm'))) out[m[1] ?? ''] = Number(m[2]);
  return out;
}
