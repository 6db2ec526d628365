/**
 * `npm run bench:kernels [-- --rounds N --seq N --pairs N --window-ms MS]`: the broker's current HTTP kernel
 * against fastify (schema validation, serialization, @fastify/swagger, @fastify/websocket) over the
 * SAME pool in one server process (servers.ts), measured from this process with undici on loopback,
 * in rounds: execute `true` on one lease (the kernels and a no-op floor interleaved in blocks), then
 * executes/s with 64 leases busy at once, in short windows that alternate between the kernels.
 * Each round gives the ratios fastify / current; the decision is on their medians. Writes
 * bench/results/kernels/latest.{json,md}. Bounded: every job has a deadline, the whole run a limit.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BrokerHttp } from '../client/brokerHttp';
import { runClosedLoop, runInterleaved, type Op } from '../client/drive';
import { describeMachine } from '../lib/machine';
import { REPO_DIR } from '../lib/brokerProcess';
import { benchOptions } from '../lib/options';
import type { KernelPorts } from './servers';
import { compareAnswers } from './parity';
import { decide, renderKernelReport, type KernelBusy, type KernelRound, type KernelRun } from './report';

const SESSIONS = 64;
/** node:http reaches its steady state only after several thousand requests (bench/README.md). */
const FIRST_WARMUP = 8000;
const ROUND_WARMUP = 500;
const SEQ_MAX_MS = 60_000;
const RAMP_MS = 300;
const DRAIN_MS = 30_000;
const RUN_LIMIT_MS = 20 * 60_000;

interface Plan {
  rounds: number;
  seqN: number;
  /** Pairs of throughput windows per round, and each window's length. */
  pairs: number;
  windowMs: number;
  outDir: string;
}

function parsePlan(argv: string[]): Plan {
  const o = benchOptions('npm run bench:kernels', argv, {
    rounds: { kind: 'int', min: 1 },
    seq: { kind: 'int', min: 100 },
    pairs: { kind: 'int', min: 1 },
    'window-ms': { kind: 'int', min: 100, what: 'MS' },
    out: { kind: 'path', what: 'DIR' },
  });
  return { rounds: o.rounds ?? 7, seqN: o.seq ?? 3000, pairs: o.pairs ?? 6, windowMs: o['window-ms'] ?? 1000, outDir: o.out ?? path.join(REPO_DIR, 'bench', 'results', 'kernels') };
}

function startServers(): Promise<{ child: ChildProcess; ports: KernelPorts }> {
  const child = fork(path.join(__dirname, 'servers.js'), [String(SESSIONS)], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the kernel servers did not start within 120 s')), 120_000);
    child.once('message', (ports) => {
      clearTimeout(timer);
      resolve({ child, ports: ports as KernelPorts });
    });
    child.once('exit', (code) => reject(new Error(`the kernel servers exited with ${code} before they were ready`)));
  });
}

/** The server's CPU (user + system) so far, in ms, from /proc (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function version(pkg: string): string {
  return (JSON.parse(fs.readFileSync(path.join(REPO_DIR, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
}

type Kernel = 'current' | 'fastify';

/**
 * One round's throughput: `plan.pairs` pairs of short windows, one per kernel, their order swapped
 * from pair to pair (and from round to round), so a burst of the shared machine's other work falls on
 * both kernels alike. Per kernel: executes that ended inside its windows over their total time, and
 * the server process's CPU per execute (all of a loop's executes, ramp and drain included).
 */
async function busyRound(plan: Plan, serverPid: number, clients: Record<Kernel, BrokerHttp>, leases: string[], round: number): Promise<KernelRound['busy']> {
  const sum = { current: { completed: 0, windowMs: 0, errors: 0, cpuMs: 0, all: 0 }, fastify: { completed: 0, windowMs: 0, errors: 0, cpuMs: 0, all: 0 } };
  for (let pair = 0; pair < plan.pairs; pair++) {
    const order: Kernel[] = (pair + round) % 2 === 0 ? ['current', 'fastify'] : ['fastify', 'current'];
    for (const kernel of order) {
      const s = sum[kernel];
      const cpuBefore = cpuMs(serverPid);
      const loop = await runClosedLoop(
        leases.map((id) => () => clients[kernel].executeChecked(id, 'true', 0).then(() => void s.all++)),
        { rampMs: RAMP_MS, durationMs: plan.windowMs, drainMs: DRAIN_MS },
      );
      s.cpuMs += cpuMs(serverPid) - cpuBefore;
      s.completed += loop.completed;
      s.windowMs += loop.windowMs;
      s.errors += loop.errors;
    }
  }
  const figures = (k: Kernel): KernelBusy => ({
    completed: sum[k].completed,
    windowMs: sum[k].windowMs,
    opsPerSec: (sum[k].completed / sum[k].windowMs) * 1000,
    errors: sum[k].errors,
    serverCpuMsPerExecute: sum[k].cpuMs / Math.max(1, sum[k].all),
  });
  return { current: figures('current'), fastify: figures('fastify') };
}

async function main(): Promise<void> {
  const plan = parsePlan(process.argv.slice(2));
  const startedAt = new Date();
  const { child, ports } = await startServers();
  const limit = setTimeout(() => {
    console.error(`bench:kernels: over ${RUN_LIMIT_MS / 60_000} min, stopping`);
    child.kill('SIGKILL');
    process.exit(1);
  }, RUN_LIMIT_MS);
  const url = (port: number): string => `http://127.0.0.1:${port}`;
  const current = new BrokerHttp(url(ports.current), SESSIONS + 1);
  const fastify = new BrokerHttp(url(ports.fastify), SESSIONS + 1);
  const noop = new BrokerHttp(url(ports.noop), 1);
  const leases: string[] = [];
  try {
    // Half the leases through each kernel: both acquire routes serve the real pool.
    for (let i = 0; i < SESSIONS; i++) leases.push(await (i % 2 ? fastify : current).acquire());
    const parity = await compareAnswers(url(ports.current), url(ports.fastify), leases[0]);
    const one = (client: BrokerHttp): Op => () => client.executeChecked(leases[0], 'true', 0);
    const ops: Op[] = [one(current), one(fastify), () => noop.post('/', {})];
    // The first warm-up on its own: on a loaded machine its 8,000 executes per path took the whole of
    // the first round's SEQ_MAX_MS, which then measured nothing (a p50 of NaN).
    await runInterleaved(ops, 0, FIRST_WARMUP, SEQ_MAX_MS);
    const rounds: KernelRound[] = [];
    for (let r = 0; r < plan.rounds; r++) {
      const [cur, fst, floor] = await runInterleaved(ops, plan.seqN, ROUND_WARMUP, SEQ_MAX_MS);
      const busy = await busyRound(plan, child.pid!, { current, fastify }, leases, r);
      const round: KernelRound = { seq: { current: cur, fastify: fst, noop: floor }, busy };
      rounds.push(round);
      console.log(
        `round ${r + 1}/${plan.rounds}: execute true p50 current ${cur.latency.p50.toFixed(3)} ms, fastify ${fst.latency.p50.toFixed(3)} ms, no-op ${floor.latency.p50.toFixed(3)} ms; ` +
          `x${SESSIONS}: current ${round.busy.current.opsPerSec.toFixed(0)}/s, fastify ${round.busy.fastify.opsPerSec.toFixed(0)}/s`,
      );
    }
    const run: KernelRun = {
      command: `npm run bench:kernels -- ${process.argv.slice(2).join(' ')}`.trim(),
      startedAt: startedAt.toISOString(),
      durationS: (Date.now() - startedAt.getTime()) / 1000,
      machine: await describeMachine(REPO_DIR),
      versions: { fastify: version('fastify'), swagger: version('@fastify/swagger'), websocket: version('@fastify/websocket'), undici: version('undici') },
      plan: { rounds: plan.rounds, seqN: plan.seqN, pairs: plan.pairs, windowMs: plan.windowMs, rampMs: RAMP_MS, sessions: SESSIONS },
      swaggerPaths: ports.swaggerPaths,
      parity,
      rounds,
      decision: decide(rounds),
    };
    fs.mkdirSync(plan.outDir, { recursive: true });
    fs.writeFileSync(path.join(plan.outDir, 'latest.json'), JSON.stringify(run, null, 2) + '\n');
    const md = renderKernelReport(run);
    fs.writeFileSync(path.join(plan.outDir, 'latest.md'), md);
    console.log('\n' + md);
  } finally {
    for (const id of leases) await current.release(id).catch(() => undefined);
    await Promise.all([current.close(), fastify.close(), noop.close()]);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.disconnect();
    await exited;
    clearTimeout(limit);
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(`bench:kernels: ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
