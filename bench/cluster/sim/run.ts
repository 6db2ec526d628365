/**
 * `npm run bench:cluster-sim [-- --nodes N --workers N --sessions N --clients N --window-ms MS --quiet-ms MS --leaves N --out DIR]`:
 * a SIMULATION of a large cluster. One real gateway (`node dist/index.js`, BROKER_ROLE=gateway) in
 * front of N simulated nodes (simNode.ts: a bare server each, answering acquire, execute and release
 * at once, with a real registration and heartbeat in a real, private etcd), in a few processes
 * (simWorker.ts). It measures:
 *
 * - etcd's write load from the heartbeats alone (its own /metrics, and the beats the nodes counted),
 *   and the CPU of etcd and of the idle gateway meanwhile;
 * - routed calls per gateway core: `clients` closed-loop clients executing on leases spread over the
 *   nodes, through the gateway; its CPU per routed call;
 * - the acquire placement rate: the same clients acquiring only; the gateway's CPU per acquire; then
 *   acquires with a request_id, whose node each gateway records in etcd, and etcd's load from them;
 * - the time the gateway takes to see a node leave: a node that revokes its lease (a SIGTERM), and one
 *   that stops beating and answering (a `kill -9`: its lease lapses at its TTL).
 *
 * Writes bench/results/cluster-sim-latest.{md,json}. Bounded: every phase has a count and a time
 * limit, the run a limit; every process is stopped at the end, Ctrl-C too.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { TestEtcd } from '../../../devtools/etcd';
import { BrokerHttp } from '../../client/brokerHttp';
import { runClosedLoop } from '../../client/drive';
import { BrokerProcess, REPO_DIR } from '../../lib/brokerProcess';
import { ensureBuilt } from '../../lib/build';
import { benchOptions } from '../../lib/options';
import { ownCpuMs } from '../../lib/cpuAccount';
import { describeMachine } from '../../lib/machine';
import { nowMs, sleep } from '../../lib/stats';
import { BENCH_RUN } from '../../protocol';
import type { WorkerCommand, WorkerConfig, WorkerStats } from './simWorker';
import { routedCalls, runBounded, writeResults } from '../results';
import { renderSimReport, type LeaveSample, type LoadFigures, type PlacedWithId, type SimRun } from './report';

const RAMP_MS = 500;
const DRAIN_MS = 30_000;
const LEAVE_LIMIT_MS = 30_000;
const POLL_MS = 20;
const RUN_LIMIT_MS = 20 * 60_000;
/** Leases the execute phase spreads its clients' calls over (each client rotates over its share). */
const LEASES = 256;

interface Plan {
  nodes: number;
  workers: number;
  sessions: number;
  clients: number;
  windowMs: number;
  quietMs: number;
  leaves: number;
  heartbeatMs: number;
  ttlSeconds: number;
  outDir: string;
}

function parsePlan(argv: string[]): Plan {
  const o = benchOptions('npm run bench:cluster-sim', argv, {
    nodes: { kind: 'int', min: 1, max: 1000 },
    workers: { kind: 'int', min: 1 },
    sessions: { kind: 'int', min: 1 },
    clients: { kind: 'int', min: 1 },
    'window-ms': { kind: 'int', min: 1, what: 'MS' },
    'quiet-ms': { kind: 'int', min: 1, what: 'MS' },
    leaves: { kind: 'int', min: 1 },
    out: { kind: 'path', what: 'DIR' },
  });
  const nodes = o.nodes ?? 200;
  return {
    nodes,
    workers: o.workers ?? 2,
    sessions: o.sessions ?? 128,
    clients: o.clients ?? 64,
    windowMs: o['window-ms'] ?? 5000,
    quietMs: o['quiet-ms'] ?? 10_000,
    leaves: Math.min(o.leaves ?? 3, Math.floor(nodes / 4)),
    heartbeatMs: 1000,
    ttlSeconds: 5,
    outDir: o.out ?? path.join(REPO_DIR, 'bench', 'results'),
  };
}

/** One process of simulated nodes, driven over IPC. */
class SimWorker {
  private nextId = 1;
  private readonly pending = new Map<number, (result: unknown) => void>();
  nodes: { nodeId: string; url: string }[] = [];

  private constructor(readonly child: ChildProcess) {
    child.on('message', (m: { id?: number; result?: unknown }) => {
      if (m.id === undefined) return;
      this.pending.get(m.id)?.(m.result);
      this.pending.delete(m.id);
    });
  }

  static async start(config: WorkerConfig): Promise<SimWorker> {
    const child = fork(path.join(__dirname, 'simWorker.js'), [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const worker = new SimWorker(child);
    worker.nodes = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('simulated nodes did not register within 120 s')), 120_000);
      child.once('message', (m: { ready?: { nodeId: string; url: string }[] }) => {
        clearTimeout(timer);
        if (m.ready) resolve(m.ready);
      });
      child.once('exit', (code) => reject(new Error(`a process of simulated nodes exited with ${code} at start`)));
      child.send(config);
    });
    return worker;
  }

  ask<T>(command: Omit<WorkerCommand, 'id'>, timeoutMs = 30_000): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`simulated nodes did not answer ${command.kind} within ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, (result) => {
        clearTimeout(timer);
        resolve(result as T);
      });
      this.child.send({ ...command, id });
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    if (this.child.connected) this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

/** etcd's own counters (its /metrics on the client port), summed over their label sets. */
async function etcdCounters(endpoint: string): Promise<Record<string, number>> {
  const text = await (await request(`${endpoint}/metrics`)).body.text();
  const want: Record<string, RegExp> = {
    // etcd 3.4 exports the same count under both names; 3.5 only the first.
    puts: /^etcd_mvcc_put_total(?:\{[^}]*\})? (\S+)$/gm,
    putsBefore35: /^etcd_debugging_mvcc_put_total(?:\{[^}]*\})? (\S+)$/gm,
    proposalsCommitted: /^etcd_server_proposals_committed_total(?:\{[^}]*\})? (\S+)$/gm,
    walFsyncs: /^etcd_disk_wal_fsync_duration_seconds_count(?:\{[^}]*\})? (\S+)$/gm,
    leaseRenewals: /^etcd_debugging_lease_renewed_total(?:\{[^}]*\})? (\S+)$/gm,
    keepAliveMessages: /^grpc_server_msg_received_total\{[^}]*grpc_method="LeaseKeepAlive"[^}]*\} (\S+)$/gm,
    putCalls: /^grpc_server_handled_total\{[^}]*grpc_method="Put"[^}]*\} (\S+)$/gm,
    dbBytes: /^etcd_mvcc_db_total_size_in_bytes(?:\{[^}]*\})? (\S+)$/gm,
  };
  const out: Record<string, number> = {};
  for (const [key, re] of Object.entries(want)) {
    let sum = NaN;
    for (const m of text.matchAll(re)) sum = (Number.isNaN(sum) ? 0 : sum) + Number(m[1]);
    out[key] = sum;
  }
  if (Number.isNaN(out.puts)) out.puts = out.putsBefore35;
  return out;
}

/** The etcd process of this run (found by its data directory), for its CPU. */
function etcdPid(dataDir: string): number {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${name}/cmdline`, 'latin1');
      if (cmd.startsWith('etcd\0') && cmd.includes(dataDir)) return Number(name);
    } catch {
      /* gone */
    }
  }
  return -1;
}

/** The node ids the gateway lists now (/cluster/targets). */
async function listedNodes(gatewayUrl: string): Promise<Set<string>> {
  const res = await request(`${gatewayUrl}/cluster/targets`);
  const targets = (await res.body.json()) as { labels: { node: string } }[];
  return new Set(targets.map((t) => t.labels.node));
}

/** Runs `work` (the phase) and the gateway's CPU and routed calls around it. */
async function withGatewayCpu<T>(gateway: BrokerProcess, work: () => Promise<T>): Promise<{ result: T; cpuMs: number; calls: number; elapsedMs: number }> {
  const calls0 = await routedCalls(gateway);
  const cpu0 = ownCpuMs(gateway.pid);
  const t0 = nowMs();
  const result = await work();
  const elapsedMs = nowMs() - t0;
  const cpuMs = ownCpuMs(gateway.pid) - cpu0;
  return { result, cpuMs, calls: (await routedCalls(gateway)) - calls0, elapsedMs };
}

function loadFigures(loop: { opsPerSec: number; completed: number; errors: number; firstError?: string; latency: { p50: number; p99: number } }, cpu: { cpuMs: number; calls: number; elapsedMs: number }): LoadFigures {
  const cpuUsPerCall = (cpu.cpuMs * 1000) / Math.max(1, cpu.calls);
  return {
    perSec: loop.opsPerSec,
    completed: loop.completed,
    errors: loop.errors,
    firstError: loop.firstError,
    p50: loop.latency.p50,
    p99: loop.latency.p99,
    gatewayCores: cpu.cpuMs / cpu.elapsedMs,
    gatewayCpuUsPerCall: cpuUsPerCall,
    perGatewayCore: 1e6 / cpuUsPerCall,
  };
}

async function measureLeave(gatewayUrl: string, worker: SimWorker, nodeId: string, how: 'leave' | 'crash'): Promise<LeaveSample> {
  const t0 = nowMs();
  await worker.ask({ kind: how, nodeId });
  const askedMs = nowMs() - t0;
  for (;;) {
    const elapsed = nowMs() - t0;
    if (!(await listedNodes(gatewayUrl)).has(nodeId)) return { nodeId, how, seenGoneMs: elapsed, askedMs };
    if (elapsed > LEAVE_LIMIT_MS) return { nodeId, how, seenGoneMs: NaN, askedMs };
    await sleep(POLL_MS);
  }
}

async function main(onStop: (stop: () => Promise<void>) => void): Promise<void> {
  const plan = parsePlan(process.argv.slice(2));
  const startedAt = new Date();
  ensureBuilt(REPO_DIR);
  const rawDir = path.join(plan.outDir, 'raw', 'cluster-sim');
  fs.mkdirSync(rawDir, { recursive: true });
  const clusterToken = `sim-${randomBytes(16).toString('hex')}`;
  const keyPrefix = `/bench-cluster-sim-${BENCH_RUN}/`;
  let etcd: TestEtcd | null = null;
  const workers: SimWorker[] = [];
  let gateway: BrokerProcess | null = null;
  onStop(async () => {
    await gateway?.stop(15_000).catch(() => undefined);
    await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));
    await etcd?.destroy().catch(() => undefined);
  });
  etcd = await TestEtcd.start();
  const pidOfEtcd = etcdPid(etcd.dataDir);
  const ids = Array.from({ length: plan.nodes }, (_, i) => `sim-${String(i + 1).padStart(4, '0')}`);
  const t0 = nowMs();
  const shares = Array.from({ length: plan.workers }, (_, w) => ids.filter((_, i) => i % plan.workers === w));
  workers.push(
    ...(await Promise.all(
      shares.map((nodeIds) => SimWorker.start({ nodeIds, sessions: plan.sessions, etcdEndpoint: etcd!.endpoint, keyPrefix, clusterToken, heartbeatMs: plan.heartbeatMs, ttlSeconds: plan.ttlSeconds })),
    )),
  );
  const registeredMs = nowMs() - t0;
  const total = plan.nodes * plan.sessions;
  gateway = await BrokerProcess.start(
    {
      name: 'sim-gateway',
      backend: 'local',
      // Only for "warm": the gateway's /health sums every node's sessions.
      containers: total / 8,
      perContainer: 8,
      image: 'unused-by-a-gateway',
      env: { BROKER_ROLE: 'gateway', BROKER_ETCD_ENDPOINTS: etcd.endpoint, BROKER_CLUSTER_TOKEN: clusterToken, BROKER_CLUSTER_PREFIX: keyPrefix, BROKER_NODE_HEARTBEAT: String(plan.heartbeatMs / 1000) },
    },
    rawDir,
  );
  const gatewaySeesAllMs = await gateway.waitWarm(60_000);
  console.log(`bench:cluster-sim (a simulation): ${plan.nodes} simulated nodes registered in ${registeredMs.toFixed(0)} ms; the gateway listed them all ${gatewaySeesAllMs.toFixed(0)} ms after its spawn`);

  // Heartbeats alone: no calls, a quiet window.
  const stats = async (): Promise<WorkerStats> => {
    const all = await Promise.all(workers.map((w) => w.ask<WorkerStats>({ kind: 'stats' })));
    return all.reduce((a, b) => ({ published: a.published + b.published, inUse: a.inUse + b.inUse }), { published: 0, inUse: 0 });
  };
  const before = { etcd: await etcdCounters(etcd.endpoint), beats: (await stats()).published, etcdCpu: ownCpuMs(pidOfEtcd), gatewayCpu: ownCpuMs(gateway.pid), at: nowMs() };
  await sleep(plan.quietMs);
  const after = { etcd: await etcdCounters(etcd.endpoint), beats: (await stats()).published, etcdCpu: ownCpuMs(pidOfEtcd), gatewayCpu: ownCpuMs(gateway.pid), at: nowMs() };
  const quietS = (after.at - before.at) / 1000;
  const perSec = (key: string): number => (after.etcd[key] - before.etcd[key]) / quietS;
  const heartbeats = {
    windowS: quietS,
    beatsPerSec: (after.beats - before.beats) / quietS,
    etcdPutsPerSec: perSec('puts'),
    etcdProposalsPerSec: perSec('proposalsCommitted'),
    etcdWalFsyncsPerSec: perSec('walFsyncs'),
    etcdLeaseRenewalsPerSec: perSec('leaseRenewals'),
    etcdKeepAliveMessagesPerSec: perSec('keepAliveMessages'),
    etcdPutCallsPerSec: perSec('putCalls'),
    etcdDbBytes: after.etcd.dbBytes,
    etcdCores: (after.etcdCpu - before.etcdCpu) / (after.at - before.at),
    gatewayIdleCores: (after.gatewayCpu - before.gatewayCpu) / (after.at - before.at),
  };
  console.log(`heartbeats: ${heartbeats.beatsPerSec.toFixed(0)} beats/s, etcd ${heartbeats.etcdPutsPerSec.toFixed(0)} puts/s, ${heartbeats.etcdWalFsyncsPerSec.toFixed(0)} WAL fsyncs/s, ${heartbeats.etcdCores.toFixed(3)} cores; idle gateway ${heartbeats.gatewayIdleCores.toFixed(3)} cores`);

  // Routed calls: leases spread over the nodes by the gateway's placement, executes in a closed loop.
  const client = new BrokerHttp(gateway.url, plan.clients);
  let routed: LoadFigures;
  let acquires: LoadFigures;
  let acquiresWithId: PlacedWithId;
  const leaseNodes = new Set<string>();
  try {
    const leases: string[] = [];
    for (let i = 0; i < LEASES; i++) leases.push(await client.acquire());
    for (const id of leases) leaseNodes.add(id.split('.')[0]);
    const ops = Array.from({ length: plan.clients }, (_, c) => {
      let turn = c;
      return () => {
        turn = (turn + plan.clients) % LEASES;
        return client.executeChecked(leases[turn], 'true', 0);
      };
    });
    const ex = await withGatewayCpu(gateway, () => runClosedLoop(ops, { rampMs: RAMP_MS, durationMs: plan.windowMs, drainMs: DRAIN_MS }));
    routed = loadFigures(ex.result, ex);
    for (const id of leases) await client.release(id);
    console.log(`routed executes: ${routed.perSec.toFixed(0)}/s over ${leaseNodes.size} nodes, the gateway at ${routed.gatewayCores.toFixed(2)} cores, ${routed.gatewayCpuUsPerCall.toFixed(0)} us per call`);

    // Acquires only (placement), then every simulated session freed again.
    const acq = await withGatewayCpu(gateway, () =>
      runClosedLoop(
        Array.from({ length: plan.clients }, () => (signal: AbortSignal) => client.acquireWith({ acquire_timeout: 5 }, signal).then(() => undefined)),
        { rampMs: RAMP_MS, durationMs: plan.windowMs, drainMs: DRAIN_MS },
      ),
    );
    acquires = loadFigures(acq.result, acq);
    await Promise.all(workers.map((w) => w.ask({ kind: 'reset' })));
    console.log(`acquires: ${acquires.perSec.toFixed(0)}/s placed, the gateway at ${acquires.gatewayCores.toFixed(2)} cores, ${acquires.gatewayCpuUsPerCall.toFixed(0)} us per acquire`);

    // Acquires with a request_id: each also records its node in etcd (a lease and a transaction).
    const e0 = await etcdCounters(etcd.endpoint);
    const etcdCpu0 = ownCpuMs(pidOfEtcd);
    const withId = await withGatewayCpu(gateway, () =>
      runClosedLoop(
        Array.from({ length: plan.clients }, () => (signal: AbortSignal) => client.acquireWith({ acquire_timeout: 5, request_id: randomBytes(8).toString('hex') }, signal).then(() => undefined)),
        { rampMs: RAMP_MS, durationMs: plan.windowMs, drainMs: DRAIN_MS },
      ),
    );
    const e1 = await etcdCounters(etcd.endpoint);
    const seconds = withId.elapsedMs / 1000;
    acquiresWithId = {
      ...loadFigures(withId.result, withId),
      etcdProposalsPerSec: (e1.proposalsCommitted - e0.proposalsCommitted) / seconds,
      etcdWalFsyncsPerSec: (e1.walFsyncs - e0.walFsyncs) / seconds,
      etcdCores: (ownCpuMs(pidOfEtcd) - etcdCpu0) / withId.elapsedMs,
      acquiresPerSecOverPhase: withId.calls / seconds,
    };
    await Promise.all(workers.map((w) => w.ask({ kind: 'reset' })));
    console.log(`acquires with a request_id: ${acquiresWithId.perSec.toFixed(0)}/s, etcd ${acquiresWithId.etcdProposalsPerSec.toFixed(0)} proposals/s at ${acquiresWithId.etcdCores.toFixed(2)} cores`);
  } finally {
    await client.close();
  }

  // Leaving: a node that revokes its lease, then one that goes silent (its lease lapses).
  const leaves: LeaveSample[] = [];
  const candidates = workers.flatMap((w) => w.nodes.map((n) => ({ worker: w, nodeId: n.nodeId })));
  for (let i = 0; i < plan.leaves * 2; i++) {
    const { worker, nodeId } = candidates[(i * 7919) % candidates.length];
    const sample = await measureLeave(gateway.url, worker, nodeId, i % 2 === 0 ? 'leave' : 'crash');
    leaves.push(sample);
    console.log(`${sample.how === 'leave' ? 'lease revoked' : 'silent (kill -9)'}: ${nodeId} gone from the gateway's membership after ${sample.seenGoneMs.toFixed(0)} ms`);
  }

  const run: SimRun = {
    command: `npm run bench:cluster-sim -- ${process.argv.slice(2).join(' ')}`.trim(),
    startedAt: startedAt.toISOString(),
    durationS: (Date.now() - startedAt.getTime()) / 1000,
    machine: await describeMachine(REPO_DIR),
    plan: { ...plan, leases: LEASES, rampMs: RAMP_MS, outDir: undefined },
    registeredMs,
    gatewaySeesAllMs,
    leaseNodes: leaseNodes.size,
    heartbeats,
    routed,
    acquires,
    acquiresWithId,
    leaves,
  };
  writeResults(plan.outDir, 'cluster-sim-latest', run, renderSimReport(run));
}

runBounded('bench:cluster-sim', RUN_LIMIT_MS, main);
