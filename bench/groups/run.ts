/**
 * The sandbox groups' figures, against floors measured in the same run:
 *
 * - `/sandbox/start` until its `/health` answers healthy, beside Docker's own `docker run -d` of the
 *   same image (no network, a process that idles), rounds interleaved;
 * - `/execute` of one `bash` action (`true`), beside the pool API's execute of `true` on a leased
 *   session of the same broker, in interleaved blocks;
 * - a vector query from inside a sandbox (dbQuery.ts), timed there.
 *
 * Usage: node -r ts-node/register/transpile-only bench/groups/run.ts [--rounds N] [--executes N] [--queries N]
 * The broker runs as built (dist/, rebuilt when older than src/), docker backend, as root (the
 * sandboxes' disks are loop mounts). Writes bench/results/groups-latest.{md,json}.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { BrokerProcess, REPO_DIR } from '../lib/brokerProcess';
import { ensureBuilt } from '../lib/build';
import { median, nowMs, sleep, summarize } from '../lib/stats';
import type { LatencySummary } from '../protocol';
import { IN_SANDBOX_QUERY_PY, populationFiles } from './dbQuery';

const IMAGE = 'bash-broker-sandbox:latest';
const DEPLOYMENT = 'bench-groups';
const BLOCK = 25;
const DOCS = 1000;
const DIM = 64;
const K = 10;

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

const agent = new Agent({ connections: 4, keepAliveTimeout: 10_000 });
async function post(url: string, body: unknown = {}): Promise<{ status: number; json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await request(url, { method: 'POST', body: JSON.stringify(body), dispatcher: agent });
  return { status: res.statusCode, json: await res.body.json() };
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await request(`${url}/health`, { dispatcher: agent });
    await res.body.dump();
    return res.statusCode === 200;
  } catch {
    return false;
  }
}

async function sandboxStartMs(broker: string, id: string): Promise<number> {
  const t0 = nowMs();
  const r = await post(`${broker}/sandbox/start`, { id, compute_resources: { cpu_cores: 1, ram_gb: 0.5, disk_gb: 1 } });
  if (r.status !== 200) throw new Error(`sandbox start: ${r.status} ${JSON.stringify(r.json)}`);
  while (!(await healthy(r.json.sandbox_url))) await sleep(5);
  const ms = nowMs() - t0;
  await post(`${broker}/sandbox/stop`, { id });
  return ms;
}

function dockerRunMs(i: number): number {
  const name = `${DEPLOYMENT}-floor-${process.pid}-${i}`;
  const t0 = nowMs();
  execFileSync('docker', ['run', '-d', '--init', '--network', 'none', '--label', `io.bash-broker.deployment=${DEPLOYMENT}-floor`, '--name', name, IMAGE, 'sleep', 'infinity'], { stdio: 'ignore' });
  const ms = nowMs() - t0;
  execFileSync('docker', ['rm', '-f', name], { stdio: 'ignore' });
  return ms;
}

async function timed(call: () => Promise<void>): Promise<number> {
  const t0 = nowMs();
  await call();
  return nowMs() - t0;
}

async function main(): Promise<void> {
  const rounds = arg('rounds', 10);
  const executes = arg('executes', 400);
  const queries = arg('queries', 500);
  if (process.getuid?.() !== 0) throw new Error('run as root: sandbox disks are loop mounts');
  ensureBuilt(REPO_DIR);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-groups-'));
  const pop = populationFiles(DOCS, DIM);
  fs.writeFileSync(path.join(work, 'population.yml'), pop.yaml);
  fs.writeFileSync(path.join(work, 'embeddings.jsonl'), pop.jsonl);
  const firstPort = 30_000 + Math.floor(Math.random() * 20_000);
  const broker = await BrokerProcess.start(
    {
      name: 'groups',
      backend: 'docker',
      containers: 1,
      perContainer: 2,
      image: IMAGE,
      env: { BROKER_DEPLOYMENT: DEPLOYMENT, BROKER_NETWORK_MODE: 'none', BROKER_SANDBOX_PORTS: `${firstPort}-${firstPort + 50}`, BROKER_GROUP_DIR: path.join(work, 'groups'), BROKER_ACTION_WAIT: '30' },
    },
    work,
  );
  try {
    await broker.waitWarm(120_000);
    const groupT0 = nowMs();
    const g = await post(`${broker.url}/group/start`, { database_access: { database_type: 'vector', access_type: 'read', namespaces: ['default'] }, initial_database_population_config: path.join(work, 'population.yml') });
    if (g.status !== 200) throw new Error(`group start: ${JSON.stringify(g.json)}`);
    const groupStartMs = nowMs() - groupT0;

    // 1. start to healthy, beside docker run, interleaved (one warm-up round each, not counted).
    const start: number[] = [];
    const run: number[] = [];
    await sandboxStartMs(broker.url, 'warm');
    dockerRunMs(-1);
    for (let i = 0; i < rounds; i++) {
      start.push(await sandboxStartMs(broker.url, `s${i}`));
      run.push(dockerRunMs(i));
    }

    // 2. /execute of one bash action beside the pool API's execute, interleaved in blocks.
    const sb = await post(`${broker.url}/sandbox/start`, { id: 'exec', attached_databases: { vector_db: { database_type: 'vector', access_type: 'read', namespaces: ['default'] } } });
    const sandboxUrl = sb.json.sandbox_url as string;
    const lease = (await post(`${broker.url}/session/acquire`)).json.session_id as string;
    const sandboxExec: number[] = [];
    const poolExec: number[] = [];
    const oneSandbox = (): Promise<void> => post(`${sandboxUrl}/execute`, { actions: { bash: { args: { command: 'true' } } } }).then((r) => {
      if (r.json.observations?.[0]?.exit_code !== 0) throw new Error(`sandbox execute: ${JSON.stringify(r.json)}`);
    });
    const onePool = (): Promise<void> => post(`${broker.url}/session/${lease}/execute`, { command: 'true' }).then((r) => {
      if (r.json.return_code !== 0) throw new Error(`pool execute: ${JSON.stringify(r.json)}`);
    });
    for (let i = 0; i < 100; i++) await Promise.all([oneSandbox(), onePool()]); // warm-up, not counted
    for (let done = 0; done < executes; done += BLOCK) {
      for (let i = 0; i < BLOCK; i++) sandboxExec.push(await timed(oneSandbox));
      for (let i = 0; i < BLOCK; i++) poolExec.push(await timed(onePool));
    }

    // 3. the database from inside the sandbox.
    const q = await post(`${sandboxUrl}/execute`, { actions: { bash: { args: { command: `python3 - ${queries} ${K} ${DIM} <<'PY'\n${IN_SANDBOX_QUERY_PY}PY` } } } });
    const line = String(q.json.observations[0].stdout).trim().split('\n').pop() ?? '';
    const parsed = JSON.parse(line) as { samples?: number[]; error?: number };
    if (!parsed.samples) throw new Error(`in-sandbox query failed: ${line}`);
    await post(`${broker.url}/group/stop`);

    const figures = {
      machine: { cpus: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 1024 ** 3) },
      groupStartMs: { ms: groupStartMs, documents: DOCS, dimension: DIM },
      sandboxStart: { broker: summarize(start), dockerRun: summarize(run), ratioP50: median(start) / median(run) },
      execute: { sandbox: summarize(sandboxExec), pool: summarize(poolExec), ratioP50: median(sandboxExec) / median(poolExec) },
      dbQuery: { k: K, documents: DOCS, dimension: DIM, inSandbox: summarize(parsed.samples) },
    };
    writeResults(figures);
  } finally {
    await broker.stop(30_000);
    execFileSync('bash', ['-c', `docker ps -aq --filter label=io.bash-broker.deployment=${DEPLOYMENT}-floor | xargs -r docker rm -f`], { stdio: 'ignore' });
    fs.rmSync(work, { recursive: true, force: true });
    await agent.close();
  }
}

function fmt(s: LatencySummary): string {
  return `${s.p50.toFixed(2)} / ${s.p90.toFixed(2)} / ${s.p99.toFixed(2)} ms (n=${s.n})`;
}

function writeResults(f: {
  machine: { cpus: number; memoryGiB: number };
  groupStartMs: { ms: number; documents: number; dimension: number };
  sandboxStart: { broker: LatencySummary; dockerRun: LatencySummary; ratioP50: number };
  execute: { sandbox: LatencySummary; pool: LatencySummary; ratioP50: number };
  dbQuery: { k: number; documents: number; dimension: number; inSandbox: LatencySummary };
}): void {
  const dir = path.join(REPO_DIR, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'groups-latest.json'), JSON.stringify(f, null, 2));
  const md = `# Sandbox groups: latest run

${new Date().toISOString()}, ${f.machine.cpus} CPUs, ${f.machine.memoryGiB} GiB, docker backend. p50 / p90 / p99.

| figure | broker | floor | ratio (p50) |
|---|---|---|---|
| \`/sandbox/start\` to healthy | ${fmt(f.sandboxStart.broker)} | \`docker run -d\`: ${fmt(f.sandboxStart.dockerRun)} | ${f.sandboxStart.ratioP50.toFixed(2)}x |
| \`/execute\` of one \`bash\` action (\`true\`) | ${fmt(f.execute.sandbox)} | pool API execute: ${fmt(f.execute.pool)} | ${f.execute.ratioP50.toFixed(2)}x |
| vector query from inside a sandbox (k=${f.dbQuery.k}, ${f.dbQuery.documents} docs, dim ${f.dbQuery.dimension}) | ${fmt(f.dbQuery.inSandbox)} | | |

\`/group/start\` with ${f.groupStartMs.documents} documents of dimension ${f.groupStartMs.dimension} loaded from YAML: ${f.groupStartMs.ms.toFixed(0)} ms (the first also loads LanceDB).
`;
  fs.writeFileSync(path.join(dir, 'groups-latest.md'), md);
  console.log(md);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
