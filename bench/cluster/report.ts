/** The cluster bench's figures: per round, their medians, the target's verdict, and the report. */
import type { SeqResult } from '../protocol';
import type { Machine } from '../lib/machine';
import { median } from '../lib/stats';

/** What a gateway may add to execute `true` p50 over the same node's own answer, in ms. */
export const GATEWAY_P50_BUDGET_MS = 0.3;

export interface BusyFigures {
  opsPerSec: number;
  p50: number;
  p99: number;
  completed: number;
  errors: number;
  /** Through the gateway only: its CPU per call it routed, in microseconds. */
  gatewayCpuUsPerCall?: number;
}

export interface EpisodeFigures {
  episodesPerSec: number;
  completed: number;
  errors: number;
  firstError?: string;
  acquireP50: number;
  acquireP99: number;
  executeP50: number;
  gatewayCpuUsPerCall?: number;
}

export interface ClusterRound {
  /** Execute `true` one at a time; `node_id`: the node that held the lease. */
  /** `compare`: the same through another build's gateway (`--compare-entry`). */
  /** `leastRelay`: the same session through the least node:http + undici relay in front of its node (leastProxy.ts). */
  seq: { gateway: SeqResult; node: SeqResult; standalone: SeqResult; noop: SeqResult; leastRelay?: SeqResult; compare?: SeqResult; node_id: string };
  busy: { gateway: BusyFigures; node: BusyFigures; compare?: BusyFigures };
  episodes: { standalone: EpisodeFigures; gateway: EpisodeFigures };
}

export interface ClusterSummary {
  /** Medians over the rounds. */
  seqP50: { gateway: number; node: number; standalone: number; noop: number };
  seqP99: { gateway: number; node: number; standalone: number };
  /** The median of the rounds' own gateway - node p50 differences, ms. */
  addedP50Ms: number;
  addedP99Ms: number;
  /** The median of the rounds' own least relay - node p50 differences, ms (NaN when not measured). */
  relayAddedP50Ms: number;
  busyP50: { gateway: number; node: number };
  busyP99: { gateway: number; node: number };
  busyThroughputRatio: number;
  episodesPerSec: { standalone: number; gateway: number };
  /** The median of the rounds' own gateway / standalone ratios. */
  episodesRatio: number;
  gatewayCpuUsPerCall: { busy: number; episodes: number };
  /** With `--compare-entry`: the other build's gateway, medians of the same figures. */
  compare?: { addedP50Ms: number; busyP50: number; busyThroughputRatio: number; gatewayCpuUsPerCall: number; cpuRatio: number; addedRatio: number };
  verdict: 'PASS' | 'FAIL';
}

export interface ClusterRun {
  command: string;
  startedAt: string;
  durationS: number;
  machine: Machine;
  plan: { rounds: number; seqN: number; busy: number; windowMs: number; rampMs: number; sessions: number; episodeClients: number; profile: boolean; compareEntry: string | null; nodeTls?: boolean };
  rounds: ClusterRound[];
  summary: ClusterSummary;
}

export function summarizeRounds(rounds: ClusterRound[]): ClusterSummary {
  const m = (f: (r: ClusterRound) => number): number => median(rounds.map(f));
  const addedP50Ms = m((r) => r.seq.gateway.latency.p50 - r.seq.node.latency.p50);
  const compared = rounds.every((r) => r.seq.compare && r.busy.compare);
  const compare = compared
    ? {
        addedP50Ms: m((r) => r.seq.compare!.latency.p50 - r.seq.node.latency.p50),
        busyP50: m((r) => r.busy.compare!.p50),
        busyThroughputRatio: m((r) => r.busy.compare!.opsPerSec / r.busy.node.opsPerSec),
        gatewayCpuUsPerCall: m((r) => r.busy.compare!.gatewayCpuUsPerCall ?? NaN),
        cpuRatio: m((r) => (r.busy.gateway.gatewayCpuUsPerCall ?? NaN) / (r.busy.compare!.gatewayCpuUsPerCall ?? NaN)),
        addedRatio: m((r) => (r.seq.gateway.latency.p50 - r.seq.node.latency.p50) / (r.seq.compare!.latency.p50 - r.seq.node.latency.p50)),
      }
    : undefined;
  return {
    ...(compare ? { compare } : {}),
    seqP50: { gateway: m((r) => r.seq.gateway.latency.p50), node: m((r) => r.seq.node.latency.p50), standalone: m((r) => r.seq.standalone.latency.p50), noop: m((r) => r.seq.noop.latency.p50) },
    seqP99: { gateway: m((r) => r.seq.gateway.latency.p99), node: m((r) => r.seq.node.latency.p99), standalone: m((r) => r.seq.standalone.latency.p99) },
    addedP50Ms,
    relayAddedP50Ms: m((r) => (r.seq.leastRelay ? r.seq.leastRelay.latency.p50 - r.seq.node.latency.p50 : NaN)),
    addedP99Ms: m((r) => r.seq.gateway.latency.p99 - r.seq.node.latency.p99),
    busyP50: { gateway: m((r) => r.busy.gateway.p50), node: m((r) => r.busy.node.p50) },
    busyP99: { gateway: m((r) => r.busy.gateway.p99), node: m((r) => r.busy.node.p99) },
    busyThroughputRatio: m((r) => r.busy.gateway.opsPerSec / r.busy.node.opsPerSec),
    episodesPerSec: { standalone: m((r) => r.episodes.standalone.episodesPerSec), gateway: m((r) => r.episodes.gateway.episodesPerSec) },
    episodesRatio: m((r) => r.episodes.gateway.episodesPerSec / r.episodes.standalone.episodesPerSec),
    gatewayCpuUsPerCall: { busy: m((r) => r.busy.gateway.gatewayCpuUsPerCall ?? NaN), episodes: m((r) => r.episodes.gateway.gatewayCpuUsPerCall ?? NaN) },
    verdict: addedP50Ms <= GATEWAY_P50_BUDGET_MS ? 'PASS' : 'FAIL',
  };
}

const ms = (v: number): string => v.toFixed(3);
/** A difference with its sign, `+0.478` or `-0.026`. */
const signedMs = (v: number): string => `${v >= 0 ? '+' : ''}${ms(v)}`;

export function renderClusterReport(run: ClusterRun): string {
  const { machine: mc, plan, summary: s } = run;
  const errors = run.rounds.reduce((n, r) => n + r.busy.gateway.errors + r.busy.node.errors + r.episodes.gateway.errors + r.episodes.standalone.errors, 0);
  const lines = [
    '# A gateway and two nodes against a standalone broker, same run, loopback (local backend)',
    '',
    ...(plan.nodeTls ? ['The gateway and the nodes speak mutual TLS (`--node-tls`): the direct calls and the least relay present the gateway\'s certificate too.', ''] : []),
    `\`${run.command}\`, ${run.startedAt}, ${run.durationS.toFixed(0)} s; commit ${mc.gitCommit}${mc.gitDirty ? ' (src/ with uncommitted changes)' : ''}; ` +
      `${mc.cores} x ${mc.cpuModel}, node ${mc.node}, load at start ${mc.loadAvgAtStart.join(' ')}`,
    '',
    `**Target: execute \`true\` p50 through the gateway at most ${GATEWAY_P50_BUDGET_MS} ms above the same node's own answer: ${s.verdict}** ` +
      `(median of the rounds' differences: +${ms(s.addedP50Ms)} ms; p99 +${ms(s.addedP99Ms)} ms).`,
    '',
    `The least relay (node:http and one undici connection, no routing, no metrics) in front of the same node added ${signedMs(s.relayAddedP50Ms)} ms in the same rounds: ` +
      `the part of the gateway's +${ms(s.addedP50Ms)} ms that any relay built on node:http and undici pays on this machine; the gateway's own work is the rest, ${signedMs(s.addedP50Ms - s.relayAddedP50Ms)} ms.`,
    '',
    '## Summary (medians over the rounds)',
    '',
    '| figure | through the gateway | the node directly | standalone | no-op HTTP floor |',
    '|---|---|---|---|---|',
    `| execute \`true\`, one at a time, p50 (ms) | ${ms(s.seqP50.gateway)} | ${ms(s.seqP50.node)} | ${ms(s.seqP50.standalone)} | ${ms(s.seqP50.noop)} |`,
    `| execute \`true\`, one at a time, p99 (ms) | ${ms(s.seqP99.gateway)} | ${ms(s.seqP99.node)} | ${ms(s.seqP99.standalone)} | |`,
    `| execute \`true\` on ${plan.busy} leases at once, p50 (ms) | ${ms(s.busyP50.gateway)} | ${ms(s.busyP50.node)} | | |`,
    `| execute \`true\` on ${plan.busy} leases at once, p99 (ms) | ${ms(s.busyP99.gateway)} | ${ms(s.busyP99.node)} | | |`,
    `| executes/s on ${plan.busy} leases, gateway / node | ${s.busyThroughputRatio.toFixed(3)} | | | |`,
    `| episodes/s at ${plan.episodeClients} clients | ${s.episodesPerSec.gateway.toFixed(1)} (gateway + 2 nodes) | | ${s.episodesPerSec.standalone.toFixed(1)} | |`,
    `| episodes/s, gateway + 2 nodes / standalone | ${s.episodesRatio.toFixed(3)} | | | |`,
    `| the gateway's CPU per routed call (us): under load / in episodes | ${s.gatewayCpuUsPerCall.busy.toFixed(1)} / ${s.gatewayCpuUsPerCall.episodes.toFixed(1)} | | | |`,
    '',
    ...(s.compare
      ? [
          `**Against the gateway of another build** (\`--compare-entry\`, over the same nodes, interleaved with this one): execute \`true\` p50 added over the node +${ms(s.compare.addedP50Ms)} ms ` +
            `there against +${ms(s.addedP50Ms)} ms here (this / that, median of the rounds' ratios: ${s.compare.addedRatio.toFixed(3)}); under load p50 ${ms(s.compare.busyP50)} ms there, ` +
            `executes/s as a share of the node's own ${s.compare.busyThroughputRatio.toFixed(3)} there, ${s.busyThroughputRatio.toFixed(3)} here; its CPU per routed call ${s.compare.gatewayCpuUsPerCall.toFixed(1)} us ` +
            `(this / that, median of the rounds' ratios: ${s.compare.cpuRatio.toFixed(3)}).`,
          '',
        ]
      : []),
    `Errors in all windows: ${errors}.`,
    '',
    '## Rounds',
    '',
    '| round | one at a time p50 gateway / node / standalone / no-op / least relay (ms) | p99 gateway / node | added p50 | busy p50 gateway / node | busy p99 gateway / node | busy executes/s gateway / node | episodes/s standalone / gateway | acquire p50 standalone / gateway | gateway CPU us/call busy / episodes |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...run.rounds.map((r, i) => {
      const { seq, busy, episodes: e } = r;
      return (
        `| ${i + 1} | ${ms(seq.gateway.latency.p50)} / ${ms(seq.node.latency.p50)} / ${ms(seq.standalone.latency.p50)} / ${ms(seq.noop.latency.p50)} / ${ms(seq.leastRelay?.latency.p50 ?? NaN)} | ` +
        `${ms(seq.gateway.latency.p99)} / ${ms(seq.node.latency.p99)} | ${signedMs(seq.gateway.latency.p50 - seq.node.latency.p50)} | ` +
        `${ms(busy.gateway.p50)} / ${ms(busy.node.p50)} | ${ms(busy.gateway.p99)} / ${ms(busy.node.p99)} | ${busy.gateway.opsPerSec.toFixed(0)} / ${busy.node.opsPerSec.toFixed(0)} | ` +
        `${e.standalone.episodesPerSec.toFixed(1)} / ${e.gateway.episodesPerSec.toFixed(1)} | ${ms(e.standalone.acquireP50)} / ${ms(e.gateway.acquireP50)} | ` +
        `${(busy.gateway.gatewayCpuUsPerCall ?? NaN).toFixed(1)} / ${(e.gateway.gatewayCpuUsPerCall ?? NaN).toFixed(1)} |`
      );
    }),
    '',
    '## What was measured',
    '',
    `- The rig: a private etcd, a standalone broker of ${plan.sessions} sessions (${plan.sessions / 8} x 8), two nodes of ${plan.sessions / 2} sessions each and one gateway, ` +
      'each `node dist/index.js` in a process of its own, local backend, all on 127.0.0.1; the client is the bench\'s own process (undici, keep-alive, one connection per concurrent caller).',
    `- One at a time: ${plan.seqN} executes of \`true\` per path and round, interleaved in blocks of 25 (the paths' order rotated by one each round): through the gateway, the same session sent to its node directly ` +
      '(with the cluster token), a lease on the standalone broker, a no-op node:http server (one loopback HTTP hop), and the same session through the least relay in front of its node ' +
      '(`leastProxy.ts`: node:http, one kept-alive undici connection, the headers copied, nothing else: the least a gateway on this stack adds). ' +
      'The first round warms each path with 8,000 unmeasured calls.',
    `- Under load: ${plan.busy} leases taken through the gateway, each looping execute \`true\`, for ${plan.windowMs} ms after a ${plan.rampMs} ms ramp through the gateway, then ` +
      'the same leases straight to their nodes (the order swapped each round).',
    `- Episodes: ${plan.episodeClients} clients each looping acquire, \`echo 1\` .. \`echo 5\`, release, for ${plan.windowMs} ms after a ${plan.rampMs} ms ramp, on the standalone broker ` +
      'and through the gateway (the order swapped each round). Every session of each side is in use: on 2 cores the nodes, the gateway and the client share the CPU, so the ratio says what the extra hop costs the machine, not what a cluster of hosts would reach.',
    "- The gateway's CPU per routed call: its utime + stime (/proc, 10 ms ticks) over a job, divided by the calls it routed (its own `broker_gateway_requests_total`, acquires included).",
    '',
  ];
  return lines.join('\n');
}
