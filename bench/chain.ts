/**
 * `npm run bench:chain` (local backend; compiled to dist-bench/ and run from there, so this
 * process, the client, carries no ts-node): where the time of one execute `true` goes, per process, on
 * the broker, on the least server over the same sessions (shellServer.ts), and on their two floors
 * (the no-op HTTP server, a raw BashSession in this process). Run it pinned to one core
 * (`taskset -c 0 npm run bench:chain`): then every operation is serialized, its latency is the CPU
 * it costs, and the per-process CPU adds up to it. Not a target: a diagnosis (bench/analysis.md).
 *
 * Per path: `WARM` unmeasured operations, then `N` measured ones, one after another. CPU per
 * operation from /proc/<pid>/task/<tid>/schedstat (nanoseconds on CPU, every thread), context
 * switches from .../status (voluntary + involuntary), for this process (the client), the server
 * process and the server's descendants (its bash); for the raw path, the client and the raw bash.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrokerHttp } from './client/brokerHttp';
import { openRaw } from './client/raw';
import { NOOP_PATH } from './client/targets';
import { BrokerProcess, REPO_DIR } from './lib/brokerProcess';
import { NoopServer } from './lib/children';
import { ensureBenchBuilt, ensureBuilt } from './lib/build';
import { snapshotCpu } from './lib/cpuAccount';
import { summarize } from './lib/stats';

const N = Number(process.env.N ?? 5000);
const WARM = Number(process.env.WARM ?? 3000);

interface Usage {
  cpuNs: number;
  switches: number;
}

function readOr(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** CPU time and context switches of every thread of `pid` so far (0 when it is gone). */
function usage(pid: number): Usage {
  const dir = `/proc/${pid}/task`;
  let tids: string[];
  try {
    tids = fs.readdirSync(dir);
  } catch {
    return { cpuNs: 0, switches: 0 };
  }
  let cpuNs = 0;
  let switches = 0;
  for (const tid of tids) {
    cpuNs += Number(readOr(`${dir}/${tid}/schedstat`).split(' ')[0] || 0);
    const status = readOr(`${dir}/${tid}/status`);
    for (const m of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)/gm)) switches += Number(m[1]);
  }
  return { cpuNs, switches };
}

/** The descendants of each of `roots`, from one snapshot of every process's parent. */
function descendantsOf(roots: readonly number[]): Map<number, number[]> {
  const { procs } = snapshotCpu();
  const out = new Map<number, number[]>();
  for (const root of roots) {
    const found: number[] = [];
    const queue = [root];
    while (queue.length > 0) {
      const p = queue.shift()!;
      for (const [child, info] of procs) {
        if (info.ppid !== p) continue;
        found.push(child);
        queue.push(child);
      }
    }
    out.set(root, found);
  }
  return out;
}

interface Path {
  name: string;
  op: () => Promise<void>;
  /** The process groups to account: label -> pids (read when the measurement starts). */
  groups: () => Record<string, number[]>;
}

interface Row {
  name: string;
  p50Us: number;
  meanUs: number;
  cpuUsPerOp: Record<string, number>;
  switchesPerOp: number;
}

async function measure(p: Path): Promise<Row> {
  for (let i = 0; i < WARM; i++) await p.op();
  const groups = p.groups();
  const pids = Object.values(groups).flat();
  const before = new Map(pids.map((pid) => [pid, usage(pid)]));
  const samples: number[] = [];
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    const s = process.hrtime.bigint();
    await p.op();
    samples.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpuUsPerOp: Record<string, number> = {};
  let switches = 0;
  for (const [label, list] of Object.entries(groups)) {
    let ns = 0;
    for (const pid of list) {
      const a = before.get(pid)!;
      const b = usage(pid);
      ns += b.cpuNs - a.cpuNs;
      switches += b.switches - a.switches;
    }
    cpuUsPerOp[label] = ns / 1000 / N;
  }
  return { name: p.name, p50Us: summarize(samples).p50 * 1000, meanUs: (wallMs * 1000) / N, cpuUsPerOp, switchesPerOp: switches / N };
}

function pinnedTo(): string {
  return /Cpus_allowed_list:\s*(\S+)/.exec(readOr('/proc/self/status'))?.[1] ?? '?';
}

async function main(): Promise<void> {
  ensureBuilt(REPO_DIR);
  ensureBenchBuilt(REPO_DIR);
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-chain-'));
  const noop = await NoopServer.start('http');
  const least = await NoopServer.startShell('local', '');
  const broker = await BrokerProcess.start({ name: 'chain', backend: 'local', containers: 1, perContainer: 1, image: '' }, logDir);
  const raw = await openRaw('local', 'default', 1, 1, '', 1);
  const http = { noop: new BrokerHttp(noop.url, 1), least: new BrokerHttp(least.url, 1), broker: new BrokerHttp(broker.url, 1) };
  try {
    await broker.waitWarm(60_000);
    const id = await http.broker.acquire();
    const servers = [noop.pid, least.pid, broker.pid];
    const tree = descendantsOf([process.pid, ...servers]);
    const ofServers = new Set(servers.flatMap((s) => [s, ...tree.get(s)!]));
    const rawBash = tree.get(process.pid)!.filter((pid) => !ofServers.has(pid));
    const self = [process.pid];
    const server = (pid: number) => () => ({ client: self, server: [pid], bash: descendantsOf([pid]).get(pid)! });
    const body = { command: 'true', timeout: 30 };
    const paths: Path[] = [
      { name: 'no-op HTTP', op: async () => void (await http.noop.post(NOOP_PATH, body)), groups: server(noop.pid) },
      { name: 'raw (client -> bash)', op: async () => void (await raw.sessions[0].execute('true', { timeoutMs: 30_000, maxOutputBytes: 1 << 20 })), groups: () => ({ client: self, server: [], bash: rawBash }) },
      { name: 'least server', op: () => http.least.executeChecked('x', 'true', 0), groups: server(least.pid) },
      { name: 'broker', op: () => http.broker.executeChecked(id, 'true', 0), groups: server(broker.pid) },
    ];
    const rows: Row[] = [];
    for (const p of paths) rows.push(await measure(p));
    const us = (v: number): string => v.toFixed(0);
    console.log(`\nexecute \`true\`, ${N} per path after ${WARM} unmeasured; CPUs allowed: ${pinnedTo()} (${os.cpus().length} online)\n`);
    console.log('| path | p50 us | mean us | CPU us/op: server / bash / client (sum) | context switches/op |');
    console.log('|---|---:|---:|---|---:|');
    for (const r of rows) {
      const c = r.cpuUsPerOp;
      const sum = c.server + c.bash + c.client;
      console.log(`| ${r.name} | ${us(r.p50Us)} | ${us(r.meanUs)} | ${us(c.server)} / ${us(c.bash)} / ${us(c.client)} (${us(sum)}) | ${r.switchesPerOp.toFixed(2)} |`);
    }
    await http.broker.release(id).catch(() => undefined);
  } finally {
    await Promise.all(Object.values(http).map((h) => h.close()));
    await raw.close();
    await Promise.all([noop.close(), least.close(), broker.stop(30_000)]);
    fs.rmSync(logDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error('bench:chain:', err);
    process.exit(1);
  },
);
