/** The kernel comparison's figures: per-round ratios fastify / current, their medians, the decision, and the report. */
import type { SeqResult } from '../protocol';
import type { Machine } from '../lib/machine';
import { median } from '../lib/stats';
import type { ParityCase } from './parity';

/** fastify is adopted only if both hot paths stay within this of the current kernel. */
export const WITHIN = 0.1;

export interface KernelRound {
  /** Execute `true` on one lease, the three paths interleaved in blocks. */
  seq: { current: SeqResult; fastify: SeqResult; noop: SeqResult };
  /** Executes of `true` with 64 leases busy at once, summed over the round's windows. */
  busy: Record<'current' | 'fastify', KernelBusy>;
}

export interface KernelBusy {
  completed: number;
  windowMs: number;
  opsPerSec: number;
  errors: number;
  /** The server process's CPU (user + system) per execute: the HTTP layer's cost, bash's not counted. */
  serverCpuMsPerExecute: number;
}

export interface Ratios {
  /** fastify / current: above 1 is slower. */
  p50: number;
  p90: number;
  /** fastify / current: below 1 is fewer executes per second. */
  throughput: number;
}

export interface Decision {
  perRound: Ratios[];
  median: Ratios;
  spread: { p50: [number, number]; throughput: [number, number] };
  adopt: boolean;
  why: string;
}

export interface KernelRun {
  command: string;
  startedAt: string;
  durationS: number;
  machine: Machine;
  versions: Record<string, string>;
  plan: { rounds: number; seqN: number; pairs: number; windowMs: number; rampMs: number; sessions: number };
  swaggerPaths: string[];
  parity: ParityCase[];
  rounds: KernelRound[];
  decision: Decision;
}

function ratios(round: KernelRound): Ratios {
  const { current, fastify } = round.seq;
  return {
    p50: fastify.latency.p50 / current.latency.p50,
    p90: fastify.latency.p90 / current.latency.p90,
    throughput: round.busy.fastify.opsPerSec / round.busy.current.opsPerSec,
  };
}

const pct = (ratio: number): string => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)}%`;

export function decide(rounds: KernelRound[]): Decision {
  const perRound = rounds.map(ratios);
  const pick = (key: keyof Ratios): number[] => perRound.map((r) => r[key]);
  const m: Ratios = { p50: median(pick('p50')), p90: median(pick('p90')), throughput: median(pick('throughput')) };
  const p50Ok = m.p50 <= 1 + WITHIN;
  const throughputOk = m.throughput >= 1 - WITHIN;
  const adopt = p50Ok && throughputOk;
  const why =
    `median execute \`true\` p50 ${pct(m.p50)} (${p50Ok ? 'within' : 'beyond'} ${WITHIN * 100}%), ` +
    `median throughput at 64 busy sessions ${pct(m.throughput)} (${throughputOk ? 'within' : 'beyond'} ${WITHIN * 100}%): ` +
    (adopt ? 'fastify stays within the bound on both' : 'keep the current kernel');
  const range = (v: number[]): [number, number] => [Math.min(...v), Math.max(...v)];
  return { perRound, median: m, spread: { p50: range(pick('p50')), throughput: range(pick('throughput')) }, adopt, why };
}

const ms = (v: number): string => v.toFixed(3);

export function renderKernelReport(run: KernelRun): string {
  const { machine: mc, decision: d } = run;
  const lines = [
    '# HTTP kernels: current (node:http + seam) against fastify, same pool, same run',
    '',
    `\`${run.command}\`, ${run.startedAt}, ${run.durationS.toFixed(0)} s; commit ${mc.gitCommit}${mc.gitDirty ? ' (src/ with uncommitted changes)' : ''}; ` +
      `${mc.cores} x ${mc.cpuModel}, node ${mc.node}, load at start ${mc.loadAvgAtStart.join(' ')}; ` +
      Object.entries(run.versions).map(([k, v]) => `${k} ${v}`).join(', '),
    '',
    `**Decision: ${d.adopt ? 'adopt fastify' : 'keep the current kernel'}**: ${d.why}.`,
    '',
    `| round | p50 current / fastify / no-op (ms) | p90 current / fastify (ms) | x${run.plan.sessions} executes/s current / fastify | server CPU ms per execute at x${run.plan.sessions}, current / fastify | p50 ratio | throughput ratio |`,
    '|---|---|---|---|---|---|---|',
    ...run.rounds.map((r, i) => {
      const q = d.perRound[i];
      const { current: c, fastify: f, noop: n } = r.seq;
      const { current: bc, fastify: bf } = r.busy;
      return (
        `| ${i + 1} | ${ms(c.latency.p50)} / ${ms(f.latency.p50)} / ${ms(n.latency.p50)} | ${ms(c.latency.p90)} / ${ms(f.latency.p90)} | ` +
        `${bc.opsPerSec.toFixed(0)} / ${bf.opsPerSec.toFixed(0)} | ${bc.serverCpuMsPerExecute.toFixed(3)} / ${bf.serverCpuMsPerExecute.toFixed(3)} | ${q.p50.toFixed(3)} | ${q.throughput.toFixed(3)} |`
      );
    }),
    `| **median** | | | | | **${d.median.p50.toFixed(3)}** | **${d.median.throughput.toFixed(3)}** |`,
    '',
    `Spread over the rounds: p50 ratio ${d.spread.p50.map((v) => v.toFixed(3)).join(' .. ')}, throughput ratio ${d.spread.throughput.map((v) => v.toFixed(3)).join(' .. ')}; ` +
      `median p90 ratio ${d.median.p90.toFixed(3)}. Errors: ${run.rounds.reduce((s, r) => s + r.seq.current.errors + r.seq.fastify.errors + r.busy.current.errors + r.busy.fastify.errors, 0)}.`,
    '',
    `Each round: ${run.plan.seqN} executes of \`true\` per path on one lease (current, fastify and the no-op floor interleaved in blocks of 25), ` +
      `then ${run.plan.sessions} leases driven at once (one connection each) in ${run.plan.pairs} pairs of ${run.plan.windowMs} ms windows, one per kernel, ` +
      `each after a ${run.plan.rampMs} ms ramp, the order swapped from pair to pair.`,
    '',
    `OpenAPI paths @fastify/swagger generated from the route schemas: ${run.swaggerPaths.map((p) => `\`${p}\``).join(', ')}.`,
    '',
    '## The same requests to both kernels',
    '',
    '| request | current | fastify | same |',
    '|---|---|---|---|',
    ...run.parity.map((p) => `| ${p.name} | \`${cell(p.current)}\` | \`${cell(p.fastify)}\` | ${p.same ? 'yes' : '**no**'} |`),
    '',
  ];
  return lines.join('\n');
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/`/g, "'").slice(0, 200);
}
