/**
 * `npm run bench:cluster [-- --rounds N --seq N --busy N --window-ms MS --profile --out DIR]`: a
 * gateway in front of two nodes against a standalone broker of the same sessions, in one run on
 * loopback (rig.ts), local backend. In rounds:
 *
 * - execute `true` one at a time on one lease: through the gateway, the same session sent straight
 *   to its node (with the cluster token), the standalone broker, and a no-op node:http floor,
 *   interleaved in blocks (what one HTTP hop costs here);
 * - executes of `true` on `busy` leases at once (under load), the same leases through the gateway and
 *   straight to their nodes, in alternating windows; the gateway's CPU per routed call;
 * - episodes (acquire, `echo 1` .. `echo 5`, release) by 64 clients at once, standalone and through
 *   the gateway, in alternating windows; the gateway's CPU per routed call.
 *
 * With `--node-tls` the gateway and the nodes speak mutual TLS (the direct calls and the least
 * relay present the gateway's certificate): run it beside a run without, each against its own
 * no-op floor, for what TLS adds.
 *
 * Writes bench/results/cluster-latest.{md,json}. With `--base <commit>` it compares instead this
 * build's standalone broker with `<commit>`'s, built by the bench in a temporary worktree
 * (standalone.ts; `--backend docker` on the engine): bench/results/standalone-compare-latest.{md,json}.
 * Bounded: every job has a deadline, the run a limit,
 * and every process started is stopped at the end (Ctrl-C too).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrokerHttp } from '../client/brokerHttp';
import { runClosedLoop, runInterleaved, type Op } from '../client/drive';
import type { SeqResult } from '../protocol';
import { episodes } from '../client/poolJobs';
import { NoopServer } from '../lib/children';
import { ensureBuilt } from '../lib/build';
import { describeMachine } from '../lib/machine';
import { REPO_DIR, tlsConnect, type BrokerProcess } from '../lib/brokerProcess';
import { benchOptions } from '../lib/options';
import { ownCpuMs } from '../lib/cpuAccount';
import { buildAtCommit, type BaseBuild } from '../lib/baseBuild';
import { ClusterRig } from './rig';
import { ratioFigures, renderStandaloneReport, standaloneRound, startPair, stopPair, type StandalonePlan, type StandaloneRound, type StandaloneRun } from './standalone';
import { routedCalls, runBounded, writeResults } from './results';
import { renderClusterReport, summarizeRounds, type BusyFigures, type ClusterRound, type ClusterRun, type EpisodeFigures } from './report';

const SESSIONS = 64;
const EPISODE_CLIENTS = 64;
/** node:http reaches its steady state only after several thousand requests (bench/README.md). */
const FIRST_WARMUP = 8000;
const ROUND_WARMUP = 300;
const SEQ_MAX_MS = 90_000;
const RAMP_MS = 500;
const DRAIN_MS = 30_000;
const RUN_LIMIT_MS = 30 * 60_000;

interface Plan {
  rounds: number;
  seqN: number;
  busy: number;
  windowMs: number;
  profile: boolean;
  /** Another build's entry script (dist/index.js of an earlier commit): its gateway runs beside, measured alike. */
  compareEntry: string | null;
  /** What the report calls that build (its commit, say) in place of its path on this machine. */
  compareLabel: string | null;
  /** A commit to build and compare this build's standalone broker with (standalone.ts), in place of the cluster rounds. */
  base: string | null;
  /** The standalone comparison's backend (the cluster rig is local). */
  backend: 'local' | 'docker';
  image: string;
  outDir: string;
  /** Mutual TLS between the gateway and the nodes. */
  nodeTls: boolean;
}

function parsePlan(argv: string[]): Plan {
  const o = benchOptions('npm run bench:cluster', argv, {
    rounds: { kind: 'int', min: 1 },
    seq: { kind: 'int', min: 100 },
    busy: { kind: 'int', min: 2, max: SESSIONS / 2 },
    'window-ms': { kind: 'int', min: 500, what: 'MS' },
    profile: { kind: 'flag' },
    'node-tls': { kind: 'flag' },
    'compare-entry': { kind: 'path', what: 'FILE' },
    'compare-label': { kind: 'text', what: 'TEXT' },
    base: { kind: 'text', what: 'COMMIT' },
    backend: { kind: 'word', of: ['local', 'docker'] },
    image: { kind: 'text', what: 'IMG' },
    out: { kind: 'path', what: 'DIR' },
  });
  return {
    rounds: o.rounds ?? 5,
    seqN: o.seq ?? 2000,
    busy: o.busy ?? 16,
    windowMs: o['window-ms'] ?? 3000,
    profile: o.profile ?? false,
    compareEntry: o['compare-entry'] ?? null,
    compareLabel: o['compare-label'] ?? null,
    base: o.base ?? null,
    backend: (o.backend ?? 'local') as Plan['backend'],
    image: o.image ?? 'bash-broker-sandbox:latest',
    outDir: o.out ?? path.join(REPO_DIR, 'bench', 'results'),
    nodeTls: o['node-tls'] ?? false,
  };
}

/** A gateway's CPU (user + system, /proc) per call it routed while `work` ran, in microseconds. */
async function gatewayCpuPerCall<T>(gateway: BrokerProcess, work: () => Promise<T>): Promise<{ result: T; cpuUsPerCall: number; calls: number }> {
  const calls0 = await routedCalls(gateway);
  const cpu0 = ownCpuMs(gateway.pid);
  const result = await work();
  const cpu1 = ownCpuMs(gateway.pid);
  const calls = (await routedCalls(gateway)) - calls0;
  return { result, cpuUsPerCall: ((cpu1 - cpu0) * 1000) / Math.max(1, calls), calls };
}

/** Executes of `true` on every lease at once, through `clientOf(lease)`, for one window. */
async function busyWindow(plan: Plan, leases: string[], clientOf: (id: string) => BrokerHttp): Promise<BusyFigures> {
  const loop = await runClosedLoop(
    leases.map((id) => () => clientOf(id).executeChecked(id, 'true', 0)),
    { rampMs: RAMP_MS, durationMs: plan.windowMs, drainMs: DRAIN_MS },
  );
  return { opsPerSec: loop.opsPerSec, p50: loop.latency.p50, p99: loop.latency.p99, completed: loop.completed, errors: loop.errors };
}

/**
 * runInterleaved with the paths' order rotated by `index` (round r starts its cycle of blocks at path
 * r), results in the order of `ops`: a path's place in the cycle (which process ran just before it)
 * may favour a path the same way in every round; rotated, each path takes each place in turn.
 */
async function interleavedRotated(ops: Op[], index: number, n: number, warmup: number): Promise<SeqResult[]> {
  const shift = index % ops.length;
  const order = ops.map((_op, i) => (i + shift) % ops.length);
  const results = await runInterleaved(order.map((i) => ops[i]), n, warmup, SEQ_MAX_MS);
  const byOp: SeqResult[] = new Array<SeqResult>(ops.length);
  order.forEach((op, at) => (byOp[op] = results[at]));
  return byOp;
}

/**
 * `relays`: the least relay in front of each node (by node id), started once with the rig: a relay
 * started anew each round would be measured cold beside gateways warmed by every round before.
 */
async function round(plan: Plan, rig: ClusterRig, index: number, warmup: number, relays: Map<string, NoopServer>): Promise<ClusterRound> {
  const gateway = new BrokerHttp(rig.gateway!.url, plan.busy);
  const standalone = new BrokerHttp(rig.standalone[0].url, 1);
  const nodeTls = rig.nodeClientTls ? tlsConnect(rig.nodeClientTls) : undefined;
  const direct = new Map(rig.nodes.map((n) => [n.id, new BrokerHttp(n.broker.url, plan.busy, rig.nodeHeaders, nodeTls)]));
  const compare = rig.compareGateway ? new BrokerHttp(rig.compareGateway.url, plan.busy) : null;
  const noop = await NoopServer.start('http');
  const noopHttp = new BrokerHttp(noop.url, 1);
  let relayHttp: BrokerHttp | null = null;
  const leases: string[] = [];
  let standaloneLease: string | null = null;
  try {
    await rig.waitAllFree();
    // One lease through the gateway (on whichever node it placed it), one on the standalone broker.
    leases.push(await gateway.acquire());
    standaloneLease = await standalone.acquire();
    const one = leases[0];
    const nodeOfOne = rig.nodeOf(one);
    const directOf = (id: string): BrokerHttp => direct.get(rig.nodeOf(id).id)!;
    // The least relay in front of the same node: what any node:http + undici relay adds here.
    const viaRelay = (relayHttp = new BrokerHttp(relays.get(nodeOfOne.id)!.url, 1));
    const ops: Op[] = [
      () => gateway.executeChecked(one, 'true', 0),
      () => directOf(one).executeChecked(one, 'true', 0),
      () => standalone.executeChecked(standaloneLease!, 'true', 0),
      () => noopHttp.post('/', {}),
      () => viaRelay.executeChecked(one, 'true', 0),
      ...(compare ? [() => compare.executeChecked(one, 'true', 0)] : []),
    ];
    const [viaGateway, viaNode, viaStandalone, viaNoop, viaLeastRelay, viaCompare] = await interleavedRotated(ops, index, plan.seqN, warmup);

    // Under load: leases taken now (an idle lease is reclaimed: rig.ts), through the gateway and
    // straight to their nodes, the order swapped by round.
    while (leases.length < plan.busy) leases.push(await gateway.acquire());
    const busyVia = async (via: BrokerProcess, client: BrokerHttp): Promise<BusyFigures> => {
      const { result, cpuUsPerCall } = await gatewayCpuPerCall(via, () => busyWindow(plan, leases, () => client));
      return { ...result, gatewayCpuUsPerCall: cpuUsPerCall };
    };
    const busyDirect = (): Promise<BusyFigures> => busyWindow(plan, leases, directOf);
    let busy: ClusterRound['busy'];
    if (index % 2 === 0) {
      const g = await busyVia(rig.gateway!, gateway);
      busy = { gateway: g, node: await busyDirect() };
    } else {
      const d = await busyDirect();
      busy = { gateway: await busyVia(rig.gateway!, gateway), node: d };
    }
    if (compare) busy.compare = await busyVia(rig.compareGateway!, compare);

    for (const id of leases.splice(0)) await gateway.release(id);
    await standalone.release(standaloneLease);
    standaloneLease = null;

    // Episodes at 64 on all the sessions: standalone and through the gateway, order swapped by round.
    // Before the first round's, one unmeasured window each: a gateway's first episodes at 64 open its
    // connections to the nodes and run its acquire path cold, for seconds on a loaded machine.
    if (index === 0) for (const url of [rig.standalone[0].url, rig.gateway!.url]) await episodes(url, EPISODE_CLIENTS, RAMP_MS, plan.windowMs, DRAIN_MS);
    const epStandalone = async (): Promise<EpisodeFigures> => episodeFigures(await episodes(rig.standalone[0].url, EPISODE_CLIENTS, RAMP_MS, plan.windowMs, DRAIN_MS));
    const epGateway = async (): Promise<EpisodeFigures> => {
      const { result, cpuUsPerCall } = await gatewayCpuPerCall(rig.gateway!, () => episodes(rig.gateway!.url, EPISODE_CLIENTS, RAMP_MS, plan.windowMs, DRAIN_MS));
      return { ...episodeFigures(result), gatewayCpuUsPerCall: cpuUsPerCall };
    };
    let eps: ClusterRound['episodes'];
    if (index % 2 === 0) {
      const s = await epStandalone();
      eps = { standalone: s, gateway: await epGateway() };
    } else {
      const g = await epGateway();
      eps = { standalone: await epStandalone(), gateway: g };
    }
    return {
      seq: { gateway: viaGateway, node: viaNode, standalone: viaStandalone, noop: viaNoop, leastRelay: viaLeastRelay, ...(viaCompare ? { compare: viaCompare } : {}), node_id: nodeOfOne.id },
      busy,
      episodes: eps,
    };
  } finally {
    for (const id of leases) await gateway.release(id).catch(() => undefined);
    if (standaloneLease) await standalone.release(standaloneLease).catch(() => undefined);
    await Promise.all([gateway.close(), standalone.close(), noopHttp.close(), relayHttp?.close(), compare?.close(), ...[...direct.values()].map((d) => d.close())]);
    await noop.close();
  }
}

/** The command as run, with the compared build named by its label rather than its path here. */
function commandLine(plan: Plan): string {
  const args = process.argv.slice(2);
  const at = args.indexOf('--compare-entry');
  if (at >= 0 && plan.compareLabel) args[at + 1] = `<${plan.compareLabel}>`;
  return `npm run bench:cluster -- ${args.map((a) => (/\s/.test(a) ? `"${a}"` : a)).join(' ')}`.trim();
}

function episodeFigures(r: Awaited<ReturnType<typeof episodes>>): EpisodeFigures {
  return { episodesPerSec: r.opsPerSec, completed: r.completed, errors: r.errors, firstError: r.firstError, acquireP50: r.acquire.p50, acquireP99: r.acquire.p99, executeP50: r.execute.p50 };
}

/** `--base`: this build's standalone broker against the base commit's, in rounds (standalone.ts). */
async function compareStandalone(plan: Plan, base: string, onStop: (stop: () => Promise<void>) => void): Promise<void> {
  const startedAt = new Date();
  const machine = await describeMachine(REPO_DIR);
  const rawDir = path.join(plan.outDir, 'raw', 'standalone-compare');
  fs.mkdirSync(rawDir, { recursive: true });
  const started: BrokerProcess[] = [];
  let build: BaseBuild | null = null;
  onStop(async () => {
    await stopPair(started);
    build?.remove();
  });
  build = buildAtCommit(REPO_DIR, base);
  const splan: StandalonePlan = { rounds: plan.rounds, seqN: plan.seqN, busy: plan.busy, windowMs: plan.windowMs, rampMs: RAMP_MS, drainMs: DRAIN_MS, sessions: SESSIONS, episodeClients: EPISODE_CLIENTS, backend: plan.backend, image: plan.image };
  const pair = await startPair(splan, build.entry, rawDir, (b) => started.push(b));
  console.log(`bench:cluster --base: this build ${pair.current.url}, ${build.shortHash} ${pair.base.url} (${plan.backend})`);
  const rounds: StandaloneRound[] = [];
  for (let r = 0; r < plan.rounds; r++) {
    const result = await standaloneRound(splan, pair, r, r === 0 ? FIRST_WARMUP : ROUND_WARMUP);
    rounds.push(result);
    const { current: c, base: b } = result;
    console.log(
      `round ${r + 1}/${plan.rounds} (this / base): execute true p50 ${c.seqP50.toFixed(3)} / ${b.seqP50.toFixed(3)} ms; x${plan.busy} executes/s ${c.busyOpsPerSec.toFixed(0)} / ${b.busyOpsPerSec.toFixed(0)}; ` +
        `episodes/s ${c.episodesPerSec.toFixed(1)} / ${b.episodesPerSec.toFixed(1)}`,
    );
  }
  const run: StandaloneRun = {
    command: commandLine(plan),
    startedAt: startedAt.toISOString(),
    durationS: (Date.now() - startedAt.getTime()) / 1000,
    machine,
    loadAvgAtEnd: os.loadavg().map((l) => Math.round(l * 100) / 100),
    base: { commit: base, shortHash: build.shortHash, subject: build.subject },
    plan: splan,
    rounds,
    figures: ratioFigures(rounds),
  };
  writeResults(plan.outDir, plan.backend === 'local' ? 'standalone-compare-latest' : `standalone-compare-${plan.backend}-latest`, run, renderStandaloneReport(run));
}

async function main(onStop: (stop: () => Promise<void>) => void): Promise<void> {
  const plan = parsePlan(process.argv.slice(2));
  ensureBuilt(REPO_DIR);
  if (plan.base) return compareStandalone(plan, plan.base, onStop);
  const startedAt = new Date();
  const rawDir = path.join(plan.outDir, 'raw', 'cluster');
  fs.mkdirSync(rawDir, { recursive: true });
  const rig = new ClusterRig(SESSIONS, rawDir, plan.profile ? ['--cpu-prof', '--cpu-prof-dir', rawDir] : [], plan.compareEntry, plan.nodeTls);
  const relays = new Map<string, NoopServer>();
  onStop(async () => {
    await Promise.all([...relays.values()].map((r) => r.close()));
    await rig.stop();
  });
  await rig.start();
  // The least relay in front of each node (the same session through it, beside the gateway).
  for (const n of rig.nodes) relays.set(n.id, await NoopServer.startLeastProxy(n.broker.url, rig.nodeHeaders, rig.nodeClientTls));
  console.log(`bench:cluster: standalone ${rig.standalone[0].url}, nodes ${rig.nodes.map((n) => `${n.id} ${n.broker.url}`).join(', ')}, gateway ${rig.gateway!.url}`);
  const rounds: ClusterRound[] = [];
  for (let r = 0; r < plan.rounds; r++) {
    const result = await round(plan, rig, r, r === 0 ? FIRST_WARMUP : ROUND_WARMUP, relays);
    rounds.push(result);
    const { seq, busy, episodes: e } = result;
    console.log(
      `round ${r + 1}/${plan.rounds}: execute true p50 gateway ${seq.gateway.latency.p50.toFixed(3)} ms, node ${seq.node.latency.p50.toFixed(3)} ms, ` +
        `standalone ${seq.standalone.latency.p50.toFixed(3)} ms, no-op ${seq.noop.latency.p50.toFixed(3)} ms, least relay ${seq.leastRelay?.latency.p50.toFixed(3)} ms; x${plan.busy} p50 gateway ${busy.gateway.p50.toFixed(3)} / node ${busy.node.p50.toFixed(3)} ms; ` +
        `episodes/s standalone ${e.standalone.episodesPerSec.toFixed(1)}, gateway ${e.gateway.episodesPerSec.toFixed(1)}; gateway CPU ${e.gateway.gatewayCpuUsPerCall?.toFixed(0)} us/call`,
    );
  }
  const run: ClusterRun = {
    command: commandLine(plan),
    startedAt: startedAt.toISOString(),
    durationS: (Date.now() - startedAt.getTime()) / 1000,
    machine: await describeMachine(REPO_DIR),
    plan: { rounds: plan.rounds, seqN: plan.seqN, busy: plan.busy, windowMs: plan.windowMs, rampMs: RAMP_MS, sessions: SESSIONS, episodeClients: EPISODE_CLIENTS, profile: plan.profile, compareEntry: plan.compareEntry, nodeTls: plan.nodeTls },
    rounds,
    summary: summarizeRounds(rounds),
  };
  writeResults(plan.outDir, 'cluster-latest', run, renderClusterReport(run));
}

runBounded('bench:cluster', RUN_LIMIT_MS, main);
