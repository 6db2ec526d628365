/** The simulation's figures and its report (every line of it says it is a simulation). */
import type { Machine } from '../../lib/machine';
import { median } from '../../lib/stats';

export interface LoadFigures {
  /** Operations per second that ended inside the window (the closed loop's own count). */
  perSec: number;
  completed: number;
  errors: number;
  firstError?: string;
  p50: number;
  p99: number;
  /** The gateway's CPU over the phase (ramp and drain included), in cores. */
  gatewayCores: number;
  /** The gateway's CPU per call it routed in the phase, microseconds. */
  gatewayCpuUsPerCall: number;
  /** Calls one fully busy gateway core would route at that cost: 1e6 / gatewayCpuUsPerCall. */
  perGatewayCore: number;
}

/** Acquires with a request_id: placed and recorded in etcd (a lease and a put-if-absent transaction each). */
export interface PlacedWithId extends LoadFigures {
  etcdProposalsPerSec: number;
  etcdWalFsyncsPerSec: number;
  etcdCores: number;
  /** Acquires the gateway routed per second over the whole phase (ramp and drain included): what etcd's rates divide by. */
  acquiresPerSecOverPhase: number;
}

export interface LeaveSample {
  nodeId: string;
  /** `leave`: its lease revoked (a SIGTERM'd node); `crash`: beats and server stopped, the lease left to lapse. */
  how: 'leave' | 'crash';
  /** From asking the node to go to the gateway's /cluster/targets no longer listing it, ms. */
  seenGoneMs: number;
  /** How long the node's own step took (the revocation's round trip to etcd). */
  askedMs: number;
}

export interface HeartbeatFigures {
  windowS: number;
  beatsPerSec: number;
  etcdPutsPerSec: number;
  etcdProposalsPerSec: number;
  etcdWalFsyncsPerSec: number;
  etcdLeaseRenewalsPerSec: number;
  etcdKeepAliveMessagesPerSec: number;
  etcdPutCallsPerSec: number;
  etcdDbBytes: number;
  etcdCores: number;
  gatewayIdleCores: number;
}

export interface SimRun {
  command: string;
  startedAt: string;
  durationS: number;
  machine: Machine;
  plan: { nodes: number; workers: number; sessions: number; clients: number; windowMs: number; quietMs: number; leaves: number; heartbeatMs: number; ttlSeconds: number; leases: number; rampMs: number; outDir?: undefined };
  registeredMs: number;
  gatewaySeesAllMs: number;
  leaseNodes: number;
  heartbeats: HeartbeatFigures;
  routed: LoadFigures;
  acquires: LoadFigures;
  acquiresWithId: PlacedWithId;
  leaves: LeaveSample[];
}

const f0 = (v: number): string => (Number.isNaN(v) ? 'n/a' : v.toFixed(0));
const f2 = (v: number): string => (Number.isNaN(v) ? 'n/a' : v.toFixed(2));

function loadRow(name: string, l: LoadFigures): string {
  return `| ${name} | ${f0(l.perSec)} | ${f2(l.p50)} / ${f2(l.p99)} | ${f2(l.gatewayCores)} | ${f0(l.gatewayCpuUsPerCall)} | ${f0(l.perGatewayCore)} | ${l.errors} |`;
}

export function renderSimReport(run: SimRun): string {
  const { machine: mc, plan, heartbeats: hb } = run;
  const leaveMs = (how: LeaveSample['how']): number[] => run.leaves.filter((l) => l.how === how).map((l) => l.seenGoneMs);
  const list = (v: number[]): string => v.map(f0).join(', ');
  return [
    `# A SIMULATION of a large cluster: one gateway in front of ${plan.nodes} simulated nodes`,
    '',
    `\`${run.command}\`, ${run.startedAt}, ${run.durationS.toFixed(0)} s; commit ${mc.gitCommit}${mc.gitDirty ? ' (src/ with uncommitted changes)' : ''}; ` +
      `${mc.cores} x ${mc.cpuModel}, node ${mc.node}, load at start ${mc.loadAvgAtStart.join(' ')}`,
    '',
    `**This is a simulation.** The gateway and etcd are the real ones; the ${plan.nodes} nodes are not brokers: each is a bare node:http server ` +
      `(in ${plan.workers} processes) that answers acquire, execute and release at once, of a pool of ${plan.sessions} sessions it only counts. ` +
      `Each keeps a real registration in etcd with the nodes' own heartbeat code (a lease of ${plan.ttlSeconds} s renewed and its record written ` +
      `every ${plan.heartbeatMs} ms; the nodes of one process share its etcd client connection). Everything runs on one ${mc.cores}-core machine: ` +
      'the gateway shares it with the simulated nodes, etcd and the client, so what counts is its CPU per call, not the rates reached here.',
    '',
    '## Membership and the store (simulation)',
    '',
    '| figure | value |',
    '|---|---|',
    `| simulated nodes registered (first beat taken), from the first start | ${f0(run.registeredMs)} ms |`,
    `| the gateway listing all of them with all their sessions, from its spawn | ${f0(run.gatewaySeesAllMs)} ms |`,
    `| heartbeats (beats the nodes completed) over ${hb.windowS.toFixed(1)} s with no calls | ${f0(hb.beatsPerSec)}/s |`,
    `| etcd: key writes (mvcc puts) | ${f0(hb.etcdPutsPerSec)}/s |`,
    `| etcd: raft proposals committed | ${f0(hb.etcdProposalsPerSec)}/s |`,
    `| etcd: WAL fsyncs | ${f0(hb.etcdWalFsyncsPerSec)}/s |`,
    `| etcd: lease keep-alive messages received / renewals counted | ${f0(hb.etcdKeepAliveMessagesPerSec)}/s / ${f0(hb.etcdLeaseRenewalsPerSec)}/s |`,
    `| etcd: its database size at the end of the window | ${f0(hb.etcdDbBytes / 1e6)} MB |`,
    `| etcd: CPU | ${hb.etcdCores.toFixed(3)} cores |`,
    `| the gateway, idle, watching ${plan.nodes} nodes beat: CPU | ${hb.gatewayIdleCores.toFixed(3)} cores |`,
    '',
    '## Calls through the gateway (simulation)',
    '',
    `${plan.clients} closed-loop clients (one keep-alive connection each), ${plan.windowMs} ms after a ${plan.rampMs} ms ramp.`,
    `Executes: on ${plan.leases} leases the gateway placed (on ${run.leaseNodes} different nodes), each client rotating over its share. Acquires: acquires only ` +
      '(placement: best of 3 random nodes with the most free sessions, then the call), with every simulated session freed again after.',
    '',
    '| phase | calls/s here | latency p50 / p99 (ms) | gateway CPU (cores) | gateway CPU per call (us) | calls per gateway core per second | errors |',
    '|---|---|---|---|---|---|---|',
    loadRow('execute (routed by id)', run.routed),
    loadRow('acquire (placed)', run.acquires),
    loadRow('acquire with a request_id (placed, recorded in etcd)', run.acquiresWithId),
    '',
    `Acquires with a request_id cost etcd ${f0(run.acquiresWithId.etcdProposalsPerSec)} raft proposals/s and ${f0(run.acquiresWithId.etcdWalFsyncsPerSec)} WAL fsyncs/s ` +
      `at ${f0(run.acquiresWithId.acquiresPerSecOverPhase)} acquires/s (${f2(run.acquiresWithId.etcdProposalsPerSec / run.acquiresWithId.acquiresPerSecOverPhase)} proposals per acquire, ` +
      `heartbeats included), and ${run.acquiresWithId.etcdCores.toFixed(2)} cores of etcd.`,
    '',
    '## A node leaving, as the gateway sees it (simulation)',
    '',
    '| how | samples (ms, from the node\'s step to the gateway no longer listing it) | median |',
    '|---|---|---|',
    `| lease revoked (a node's SIGTERM) | ${list(leaveMs('leave'))} | ${f0(median(leaveMs('leave')))} |`,
    `| silent: beats and server stopped at once (a \`kill -9\`), the lease left to lapse (TTL ${plan.ttlSeconds} s) | ${list(leaveMs('crash'))} | ${f0(median(leaveMs('crash')))} |`,
    '',
    "Measured by polling the gateway's `/cluster/targets` every 20 ms. A silent node is dropped when its lease expires: " +
      `between TTL - heartbeat (${plan.ttlSeconds - plan.heartbeatMs / 1000} s) and the TTL after its last beat, plus etcd's own check of expired leases. ` +
      'Calls for a silent node\'s ids fail at once meanwhile (its connections are refused: 410 `node_lost`); only placement waits for the lease.',
    '',
  ].join('\n');
}
