/**
 * Per-lease filesystem isolation's cost, in one run on the docker backend (docs/isolation.md):
 *
 * - episodes/s (acquire, 5 x `true`, release) at `--clients` concurrent clients (64) on a pool of that
 *   many sessions (8 per container), isolation off, on, and a `fresh_container` pool of the same size;
 * - release to AVAILABLE, p50 and p90 over `--samples` single releases (the client polls /health);
 * - an episode that writes 100 MB (in /root: the session's own layer with isolation, the container's
 *   writable layer without): from its release to its slot AVAILABLE again;
 * - memory per idle session (the containers' memory cgroups after the warm-up, per session) and the
 *   private disk an idle isolated session holds (its tmpfs, from inside).
 *
 * Usage: node -r ts-node/register/transpile-only bench/isolation.ts [--clients 64] [--seconds 20]
 *        [--samples 40] [--fresh-containers 64] [--out bench/results/isolation-latest.md]
 * Needs root (the host's cgroups), the engine on this host and bash-broker-test (scripts/docker-images.sh).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrokerProcess, REPO_DIR, type BrokerSpec } from './lib/brokerProcess';
import { BrokerHttp } from './client/brokerHttp';
import { nowMs, sleep, summarize } from './lib/stats';
import { BENCH_DEPLOYMENT } from './protocol';
import { LABEL_DEPLOYMENT } from '../src/backends/docker/containers/labels';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const CLIENTS = Number(args.get('clients') ?? 64);
const SECONDS = Number(args.get('seconds') ?? 20);
const SAMPLES = Number(args.get('samples') ?? 40);
const FRESH_CONTAINERS = Number(args.get('fresh-containers') ?? CLIENTS);
const OUT = path.resolve(REPO_DIR, args.get('out') ?? 'bench/results/isolation-latest.md');
const IMAGE = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
const PER_CONTAINER = 8;
const HUNDRED_MB = 100 * 1024 * 1024;

interface ModeResult {
  name: string;
  episodesPerSec: number;
  episodes: number;
  errors: number;
  releaseP50Ms: number | null;
  releaseP90Ms: number | null;
  bigEpisodeReadyMs: number | null;
  memoryPerIdleSessionMiB: number | null;
  diskPerIdleSessionKiB: number | null;
  cpuSecondsPerEpisode: number | null;
}

/** CPU time of the whole machine (all processes), seconds: /proc/stat's first line. */
function machineCpuSeconds(): number {
  const fields = fs.readFileSync('/proc/stat', 'latin1').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = fields[3] + fields[4];
  const total = fields.reduce((a, b) => a + b, 0);
  return (total - idle) / 100;
}

/** Closed loop: `CLIENTS` clients doing whole episodes for `SECONDS`. */
async function episodes(url: string, pool: string | null): Promise<{ done: number; errors: number; perSec: number; cpuPerEpisode: number }> {
  const http = new BrokerHttp(url, CLIENTS);
  const body = pool ? { pool } : {};
  let done = 0;
  let errors = 0;
  const cpu0 = machineCpuSeconds();
  const t0 = nowMs();
  const until = t0 + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (nowMs() < until) {
        try {
          const { session_id: id } = await http.acquireWith(body);
          for (let k = 0; k < 5; k++) await http.post(`/session/${id}/execute`, { command: 'true' });
          await http.release(id);
          done++;
        } catch {
          errors++;
          await sleep(50);
        }
      }
    }),
  );
  const seconds = (nowMs() - t0) / 1000;
  const cpu = machineCpuSeconds() - cpu0;
  await http.close();
  return { done, errors, perSec: done / seconds, cpuPerEpisode: done > 0 ? cpu / done : NaN };
}

/** From a release to /health's available count back at `total`, ms (polled every ms). */
async function releaseToAvailable(http: BrokerHttp, id: string, total: number): Promise<number> {
  const t0 = nowMs();
  await http.release(id);
  while ((await http.health()).available_sessions < total) await sleep(1);
  return nowMs() - t0;
}

async function releaseSamples(url: string, total: number): Promise<number[]> {
  const http = new BrokerHttp(url, 2);
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const id = await http.acquire();
    await http.post(`/session/${id}/execute`, { command: 'true' });
    samples.push(await releaseToAvailable(http, id, total));
  }
  await http.close();
  return samples;
}

async function bigEpisode(url: string, total: number): Promise<number> {
  const http = new BrokerHttp(url, 2);
  const id = await http.acquire();
  const r = await http.post<{ stdout: string }>(`/session/${id}/execute`, { command: `head -c ${HUNDRED_MB} /dev/zero | cat >/root/big && wc -c </root/big`, timeout: 120 });
  if (r.stdout.trim() !== String(HUNDRED_MB)) throw new Error(`the 100 MB episode wrote ${r.stdout.trim()} bytes`);
  const ms = await releaseToAvailable(http, id, total);
  await http.close();
  return ms;
}

/** This bench's pool containers' memory cgroups (cgroup v1, cgroupfs), summed, per session. */
function memoryPerSessionMiB(sessions: number): number | null {
  const dir = '/sys/fs/cgroup/memory/docker';
  if (!fs.existsSync(dir)) return null;
  const ours = execFileSync('docker', ['ps', '-q', '--no-trunc', '--filter', `label=${LABEL_DEPLOYMENT}=${BENCH_DEPLOYMENT}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
  let sum = 0;
  for (const id of ours) {
    const usage = path.join(dir, id, 'memory.usage_in_bytes');
    if (!fs.existsSync(usage)) continue;
    const cache = /^total_inactive_file (\d+)$/m.exec(fs.readFileSync(path.join(dir, id, 'memory.stat'), 'latin1'));
    sum += Number(fs.readFileSync(usage, 'latin1')) - Number(cache?.[1] ?? 0);
  }
  return sum / sessions / 1024 / 1024;
}

async function diskPerIdleSessionKiB(url: string): Promise<number> {
  const http = new BrokerHttp(url, 1);
  const id = await http.acquire();
  const r = await http.post<{ stdout: string }>(`/session/${id}/execute`, { command: "df -k /dev/shm | awk 'NR==2 {print $3}'" });
  await http.release(id);
  await http.close();
  return Number(r.stdout.trim());
}

async function runMode(name: string, env: Record<string, string>, fresh: boolean): Promise<ModeResult> {
  const spec: BrokerSpec = fresh
    ? { name, backend: 'docker', containers: 1, perContainer: 1, image: IMAGE, env: { ...env, BROKER_POOLS: JSON.stringify({ fresh: { containers: FRESH_CONTAINERS, sessions_per_container: 1, fresh_container: true } }) } }
    : { name, backend: 'docker', containers: CLIENTS / PER_CONTAINER, perContainer: PER_CONTAINER, image: IMAGE, env };
  spec.nodeFlags = ['-r', 'ts-node/register/transpile-only'];
  spec.entry = path.join(REPO_DIR, 'src', 'index.ts');
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-isolation-'));
  process.stderr.write(`[isolation] ${name}: starting\n`);
  const broker = await BrokerProcess.start(spec, logDir);
  try {
    await broker.waitWarm(600_000);
    const total = fresh ? FRESH_CONTAINERS : CLIENTS;
    // The named pool's counts are under `pools` (the top level is the default pool's).
    if (fresh) while (((await broker.health()) as { pools?: { fresh?: { available_sessions: number } } }).pools?.fresh?.available_sessions !== total) await sleep(200);
    await sleep(3000); // idle: the warm-up's own work settles
    const memory = fresh ? null : memoryPerSessionMiB(total);
    const disk = env.BROKER_SESSION_ISOLATION === '1' ? await diskPerIdleSessionKiB(broker.url) : null;
    process.stderr.write(`[isolation] ${name}: episodes\n`);
    const ep = await episodes(broker.url, fresh ? 'fresh' : null);
    if (fresh) return { name, episodesPerSec: ep.perSec, episodes: ep.done, errors: ep.errors, releaseP50Ms: null, releaseP90Ms: null, bigEpisodeReadyMs: null, memoryPerIdleSessionMiB: null, diskPerIdleSessionKiB: null, cpuSecondsPerEpisode: ep.cpuPerEpisode };
    await broker.waitWarm(120_000);
    process.stderr.write(`[isolation] ${name}: releases\n`);
    const releases = summarize(await releaseSamples(broker.url, total));
    const big = await bigEpisode(broker.url, total);
    process.stderr.write(`[isolation] ${name}: ${ep.perSec.toFixed(1)} episodes/s, release p50 ${releases.p50.toFixed(1)} ms, 100 MB ${big.toFixed(0)} ms\n`);
    return {
      name,
      episodesPerSec: ep.perSec,
      episodes: ep.done,
      errors: ep.errors,
      releaseP50Ms: releases.p50,
      releaseP90Ms: releases.p90,
      bigEpisodeReadyMs: big,
      memoryPerIdleSessionMiB: memory,
      diskPerIdleSessionKiB: disk,
      cpuSecondsPerEpisode: ep.cpuPerEpisode,
    };
  } finally {
    await broker.stop(60_000);
  }
}

function fmt(n: number | null, digits = 1): string {
  return n === null || Number.isNaN(n) ? '—' : n.toFixed(digits);
}

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const load0 = os.loadavg()[0];
  const off = await runMode('isolation off', { BROKER_SESSION_ISOLATION: '0' }, false);
  const on = await runMode('isolation on', { BROKER_SESSION_ISOLATION: '1' }, false);
  const fresh = await runMode('fresh_container pool', { BROKER_SESSION_ISOLATION: '0' }, true);
  const rows = [off, on, fresh].map(
    (r) =>
      `| ${r.name} | ${fmt(r.episodesPerSec)} (${r.episodes}, ${r.errors} errors) | ${fmt(r.cpuSecondsPerEpisode === null ? null : r.cpuSecondsPerEpisode * 1000)} | ${fmt(r.releaseP50Ms)} / ${fmt(r.releaseP90Ms)} | ${fmt(r.bigEpisodeReadyMs, 0)} | ${fmt(r.memoryPerIdleSessionMiB, 2)} | ${fmt(r.diskPerIdleSessionKiB, 0)} |`,
  );
  const text = `# Per-lease isolation: the cost

\`node -r ts-node/register/transpile-only bench/isolation.ts --clients ${CLIENTS} --seconds ${SECONDS} --samples ${SAMPLES} --fresh-containers ${FRESH_CONTAINERS}\`,
${started}, ${os.cpus().length} vCPUs, image ${IMAGE}, 1-min load ${load0.toFixed(1)} at the start and ${os.loadavg()[0].toFixed(1)} at the end.
Pools of ${CLIENTS} sessions (${PER_CONTAINER} per container; the \`fresh_container\` pool ${FRESH_CONTAINERS} containers of one), ${CLIENTS} clients each doing
episodes (acquire, 5 × \`true\`, release) for ${SECONDS} s.

| | episodes/s (episodes, errors) | machine CPU per episode, ms | release to AVAILABLE p50 / p90, ms | 100 MB episode: release to AVAILABLE, ms | memory per idle session, MiB | private disk per idle session, KiB |
|---|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

- on / off episodes/s: **${fmt(on.episodesPerSec / off.episodesPerSec, 2)}** (goal ≥ 0.8); on / \`fresh_container\`: **${fmt(on.episodesPerSec / fresh.episodesPerSec, 1)}** (goal ≥ 5).
- Memory is the pool containers' memory cgroups (page cache of inactive files left out) over their sessions, idle after the warm-up.
`;
  fs.mkdirSync(path.dirname(OUT), { recursive: true });
  fs.writeFileSync(OUT, text);
  process.stdout.write(text);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
