/**
 * Per-lease filesystem isolation's cost, in one run on the docker backend (docs/isolation.md). For
 * each size in `--clients` (64,256), on a pool of that many sessions (8 per container):
 *
 * - episodes/s (acquire, 5 x `true`, release) at that many concurrent clients with isolation off, on
 *   (sessions started by the session init, sessionInit.c: such an episode writes nothing, so its
 *   session is reused in place), on with an episode whose first command writes one small file (its
 *   slot pays a new session), on through the setup script (the init withheld: no compiler for that
 *   broker, in pipes' root of its own), and a `fresh_container` pool of the same size; and the
 *   share of releases whose shell was recycled in place;
 * - release to AVAILABLE, p50 and p90 over `--samples` single releases (the client polls /health);
 * - an episode that writes 100 MB (in /root: the session's own layer with isolation, the container's
 *   writable layer without): from its release to its slot AVAILABLE again;
 * - memory per idle session (the containers' memory cgroups after the warm-up, per session) and the
 *   private disk an idle isolated session holds (its tmpfs, from inside).
 *
 * Usage: node -r ts-node/register/transpile-only bench/isolation.ts [--clients 64,256] [--seconds 20]
 *        [--samples 30] [--fresh 1] [--rounds 1] [--modes off,on,onWrites,onWritesNoRewind,script] [--out bench/results/isolation-latest.md]
 * `--rounds N` runs off, on and script N times interleaved; the ratios are of their medians.
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
const SIZES = (args.get('clients') ?? '64,256').split(',').map(Number);
const SECONDS = Number(args.get('seconds') ?? 20);
const SAMPLES = Number(args.get('samples') ?? 30);
const FRESH = (args.get('fresh') ?? '1') !== '0';
/** Rounds of the modes per size, interleaved (off, on, script, off, ...): on a shared machine the load moves between modes. */
const ROUNDS = Number(args.get('rounds') ?? 1);
/** Which modes to run (off,on,onWrites,onWritesNoRewind,script), in that order per round; all by default. */
const MODES = (args.get('modes') ?? 'off,on,onWrites,script').split(',') as Mode[];
const OUT = path.resolve(REPO_DIR, args.get('out') ?? 'bench/results/isolation-latest.md');
const IMAGE = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
const PER_CONTAINER = 8;
const HUNDRED_MB = 100 * 1024 * 1024;

interface ModeResult {
  name: string;
  clients: number;
  episodesPerSec: number;
  episodes: number;
  errors: number;
  releaseP50Ms: number | null;
  releaseP90Ms: number | null;
  bigEpisodeReadyMs: number | null;
  memoryPerIdleSessionMiB: number | null;
  diskPerIdleSessionKiB: number | null;
  cpuSecondsPerEpisode: number | null;
  /** Releases whose shell was recycled (or, isolated, reused) in place, over all of the episodes' releases. */
  inPlaceShare: number | null;
  ownCpuSecondsPerEpisode: number | null;
  brokerCpuSecondsPerEpisode: number | null;
}

/** CPU time of the whole machine (all processes, other users' included), seconds: /proc/stat's first line. */
function machineCpuSeconds(): number {
  const fields = fs.readFileSync('/proc/stat', 'latin1').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = fields[3] + fields[4];
  const total = fields.reduce((a, b) => a + b, 0);
  return (total - idle) / 100;
}

/** This bench's pool containers (their ids). */
function benchContainers(): string[] {
  return execFileSync('docker', ['ps', '-q', '--no-trunc', '--filter', `label=${LABEL_DEPLOYMENT}=${BENCH_DEPLOYMENT}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

/**
 * CPU time of this run's own work, seconds: the broker process, and the pool containers' cpuacct
 * cgroups (cgroup v1). Not the engine's (a fresh_container pool's container starts are mostly the
 * engine's: see the machine's figure): the machine is shared, and its whole CPU counts others' work.
 */
function ownCpuSeconds(brokerPid: number, containers: string[]): { broker: number; containers: number } {
  const stat = fs.readFileSync(`/proc/${brokerPid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const broker = (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime (clock ticks)
  let inContainers = 0;
  for (const id of containers) {
    try {
      inContainers += Number(fs.readFileSync(`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, 'latin1')) / 1e9;
    } catch {
      /* not cgroup v1 cgroupfs, or removed meanwhile */
    }
  }
  return { broker, containers: inContainers };
}

/** An episode's five commands: `true` five times, or a small file written first (`writes`). */
function episodeCommands(writes: boolean): string[] {
  return writes ? ['echo episode >/tmp/episode', 'true', 'true', 'true', 'true'] : ['true', 'true', 'true', 'true', 'true'];
}

/** Closed loop: `clients` clients doing whole episodes for `SECONDS`. */
async function episodes(url: string, pool: string | null, clients: number, brokerPid: number, writes: boolean): Promise<{ done: number; errors: number; perSec: number; cpuPerEpisode: number; ownCpuPerEpisode: number; brokerCpuPerEpisode: number }> {
  const http = new BrokerHttp(url, clients);
  const body = pool ? { pool } : {};
  let done = 0;
  let errors = 0;
  const cpu0 = machineCpuSeconds();
  const containers = benchContainers();
  const own0 = ownCpuSeconds(brokerPid, containers);
  const t0 = nowMs();
  const until = t0 + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (nowMs() < until) {
        try {
          const { session_id: id } = await http.acquireWith(body);
          for (const command of episodeCommands(writes)) await http.post(`/session/${id}/execute`, { command });
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
  const own1 = ownCpuSeconds(brokerPid, containers);
  const broker = own1.broker - own0.broker;
  const own = broker + own1.containers - own0.containers;
  await http.close();
  const per = (x: number): number => (done > 0 ? x / done : NaN);
  return { done, errors, perSec: done / seconds, cpuPerEpisode: per(cpu), ownCpuPerEpisode: per(own), brokerCpuPerEpisode: per(broker) };
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
  let sum = 0;
  for (const id of benchContainers()) {
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

type Mode = 'off' | 'on' | 'onWrites' | 'onWritesNoRewind' | 'script' | 'fresh' | 'netOff' | 'netOffWrites';
const MODE_NAMES: Record<Mode, string> = {
  off: 'isolation off',
  on: 'isolation on',
  onWrites: 'isolation on, episode writes a file',
  onWritesNoRewind: 'isolation on, episode writes a file, no rewind',
  netOff: 'isolation on, no netns nor memory or CPU limits',
  netOffWrites: 'isolation on, no netns nor limits, episode writes a file',
  script: 'isolation on, setup script',
  fresh: 'fresh_container pool',
};

/** Shells recycled in place and reopened at release so far (broker_shell_recycles_total). */
async function recycles(broker: BrokerProcess): Promise<{ inPlace: number; reopened: number }> {
  const text = await broker.metrics();
  const count = (result: string): number => Number(new RegExp(`^broker_shell_recycles_total\\{[^}]*result="${result}"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { inPlace: count('in_place'), reopened: count('reopened') };
}

/**
 * The broker's environment for a mode. `script`: the session init withheld (no compiler, and a pipes'
 * root of its own where no earlier build lies), so its containers start sessions through the script.
 */
function modeEnv(mode: Mode, scriptRoot: string): Record<string, string> {
  if (mode === 'on' || mode === 'onWrites') return { BROKER_SESSION_ISOLATION: '1' };
  // A writing episode's release starts a new session in new namespaces, as without rewinds (isolation/sessionRewind.c).
  if (mode === 'onWritesNoRewind') return { BROKER_SESSION_ISOLATION: '1', BROKER_SESSION_REWIND: '0' };
  // The sessions' own networks and memory/CPU limits off: the network shared, no memory limit, no CPU settings written.
  if (mode === 'netOff' || mode === 'netOffWrites') return { BROKER_SESSION_ISOLATION: '1', BROKER_SESSION_NETWORK: 'shared', BROKER_SESSION_MEMORY: '0' };
  if (mode === 'script') return { BROKER_SESSION_ISOLATION: '1', BROKER_DOCKER_FIFO_DIR: scriptRoot, CC: '/bin/false' };
  return { BROKER_SESSION_ISOLATION: '0' };
}

async function runMode(mode: Mode, clients: number): Promise<ModeResult> {
  const name = MODE_NAMES[mode];
  const fresh = mode === 'fresh';
  const scriptRoot = path.join('/dev/shm', `bench-isolation-script-${process.pid}`);
  const env = modeEnv(mode, scriptRoot);
  const spec: BrokerSpec = fresh
    ? { name, backend: 'docker', containers: 1, perContainer: 1, image: IMAGE, env: { ...env, BROKER_POOLS: JSON.stringify({ fresh: { containers: clients, sessions_per_container: 1, fresh_container: true } }) } }
    : { name, backend: 'docker', containers: clients / PER_CONTAINER, perContainer: PER_CONTAINER, image: IMAGE, env };
  spec.nodeFlags = ['-r', 'ts-node/register/transpile-only'];
  spec.entry = path.join(REPO_DIR, 'src', 'index.ts');
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-isolation-'));
  process.stderr.write(`[isolation] ${name} at ${clients}: starting\n`);
  const broker = await BrokerProcess.start(spec, logDir);
  try {
    await broker.waitWarm(900_000);
    // The named pool's counts are under `pools` (the top level is the default pool's).
    if (fresh) while (((await broker.health()) as { pools?: { fresh?: { available_sessions: number } } }).pools?.fresh?.available_sessions !== clients) await sleep(200);
    await sleep(3000); // idle: the warm-up's own work settles
    const memory = fresh ? null : memoryPerSessionMiB(clients);
    const disk = env.BROKER_SESSION_ISOLATION === '1' ? await diskPerIdleSessionKiB(broker.url) : null;
    process.stderr.write(`[isolation] ${name} at ${clients}: episodes\n`);
    const recycled0 = await recycles(broker);
    const ep = await episodes(broker.url, fresh ? 'fresh' : null, clients, broker.pid, mode === 'onWrites' || mode === 'onWritesNoRewind' || mode === 'netOffWrites');
    const recycled1 = await recycles(broker);
    const inPlace = recycled1.inPlace - recycled0.inPlace;
    const releases = inPlace + recycled1.reopened - recycled0.reopened;
    const result: ModeResult = {
      name,
      clients,
      episodesPerSec: ep.perSec,
      episodes: ep.done,
      errors: ep.errors,
      releaseP50Ms: null,
      releaseP90Ms: null,
      bigEpisodeReadyMs: null,
      memoryPerIdleSessionMiB: memory,
      diskPerIdleSessionKiB: disk,
      cpuSecondsPerEpisode: ep.cpuPerEpisode,
      ownCpuSecondsPerEpisode: ep.ownCpuPerEpisode,
      brokerCpuSecondsPerEpisode: ep.brokerCpuPerEpisode,
      inPlaceShare: releases > 0 ? inPlace / releases : null,
    };
    if (fresh) return result;
    await broker.waitWarm(120_000);
    process.stderr.write(`[isolation] ${name} at ${clients}: releases\n`);
    const samples = summarize(await releaseSamples(broker.url, clients));
    const big = await bigEpisode(broker.url, clients);
    process.stderr.write(`[isolation] ${name} at ${clients}: ${ep.perSec.toFixed(1)} episodes/s, release p50 ${samples.p50.toFixed(1)} ms, 100 MB ${big.toFixed(0)} ms\n`);
    return { ...result, releaseP50Ms: samples.p50, releaseP90Ms: samples.p90, bigEpisodeReadyMs: big };
  } finally {
    await broker.stop(60_000);
    if (mode === 'script') fs.rmSync(scriptRoot, { recursive: true, force: true });
  }
}

function fmt(n: number | null, digits = 1): string {
  return n === null || Number.isNaN(n) ? '—' : n.toFixed(digits);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? NaN : sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function row(r: ModeResult): string {
  const ms = (x: number | null): number | null => (x === null ? null : x * 1000);
  const share = r.inPlaceShare === null ? '—' : `${Math.round(r.inPlaceShare * 100)}%`;
  return `| ${r.clients} | ${r.name} | ${fmt(r.episodesPerSec)} (${r.episodes}, ${r.errors} errors) | ${share} | ${fmt(ms(r.ownCpuSecondsPerEpisode))} (${fmt(ms(r.brokerCpuSecondsPerEpisode))}) | ${fmt(ms(r.cpuSecondsPerEpisode))} | ${fmt(r.releaseP50Ms)} / ${fmt(r.releaseP90Ms)} | ${fmt(r.bigEpisodeReadyMs, 0)} | ${fmt(r.memoryPerIdleSessionMiB, 2)} | ${fmt(r.diskPerIdleSessionKiB, 0)} |`;
}

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const load0 = os.loadavg();
  const results: ModeResult[] = [];
  const ratios: string[] = [];
  for (const clients of SIZES) {
    const modes = MODES;
    const got = new Map<Mode, number[]>();
    const cpu = new Map<Mode, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      // A fresh_container pool once (its containers' starts dominate it, not the load).
      for (const mode of round === 0 && FRESH ? [...modes, 'fresh' as const] : modes) {
        const r = await runMode(mode, clients);
        got.set(mode, [...(got.get(mode) ?? []), r.episodesPerSec]);
        if (r.ownCpuSecondsPerEpisode !== null) cpu.set(mode, [...(cpu.get(mode) ?? []), r.ownCpuSecondsPerEpisode]);
        results.push(r);
      }
    }
    const per = (m: Mode): number => median(got.get(m) ?? []);
    const cpuOf = (m: Mode): number => median(cpu.get(m) ?? []);
    ratios.push(
      `- ${clients} clients${ROUNDS > 1 ? ` (medians of ${ROUNDS} rounds)` : ''}: episodes/s on / off **${fmt(per('on') / per('off'), 2)}** (goal ≥ 0.8; an episode that writes a file ${fmt(per('onWrites') / per('off'), 2)}, through the setup script ${fmt(per('script') / per('off'), 2)})` +
        (FRESH ? `, on / \`fresh_container\` **${fmt(per('on') / per('fresh'), 1)}** (goal ≥ 5)` : '') +
        `; broker + containers CPU per episode off / on **${fmt(cpuOf('off') / cpuOf('on'), 2)}** (writes a file ${fmt(cpuOf('off') / cpuOf('onWrites'), 2)}): the episodes/s on / off where that CPU bounds them.` +
        (got.has('onWritesNoRewind') ? ` Writing episodes with rewinds / without: episodes/s ${fmt(per('onWrites') / per('onWritesNoRewind'), 2)}, CPU per episode ${fmt(cpuOf('onWrites') / cpuOf('onWritesNoRewind'), 2)}; CPU per writing episode / untouched ${fmt(cpuOf('onWrites') / cpuOf('on'), 2)} (goal ≤ 1.3).` : '') +
        (got.has('netOff') ? ` Netns and limits on / off: episodes/s ${fmt(per('on') / per('netOff'), 2)}, writing ${fmt(per('onWrites') / per('netOffWrites'), 2)} (goal ≥ 0.9); CPU per writing episode (a new session each) ${fmt(1000 * (cpuOf('onWrites') - cpuOf('netOffWrites')), 2)} ms more.` : ''),
    );
  }
  const load1 = os.loadavg();
  const text = `# Per-lease isolation: the cost

\`node -r ts-node/register/transpile-only bench/isolation.ts --clients ${SIZES.join(',')} --seconds ${SECONDS} --samples ${SAMPLES} --fresh ${FRESH ? 1 : 0} --rounds ${ROUNDS}\`,
${started}, ${os.cpus().length} vCPUs, image ${IMAGE}; load average (1, 5, 15 min) ${load0.map((l) => l.toFixed(1)).join(', ')} at the start and ${load1.map((l) => l.toFixed(1)).join(', ')} at the end (the machine is shared).
Pools of as many sessions as clients (${PER_CONTAINER} per container; the \`fresh_container\` pool as many containers of one), each client doing
episodes (acquire, 5 × \`true\`, release) for ${SECONDS} s. "isolation on" starts sessions through the session init, and such an
episode writes nothing, so its session is reused in place; "episode writes a file" is the same with \`echo episode >/tmp/episode\` as its
first command (its slot is rewound at release; "no rewind": it pays a new session); "setup script" is isolation with the init withheld (the fallback: no reuse in place).

| clients | | episodes/s (episodes, errors) | recycled in place | broker + containers CPU per episode (the broker's), ms | machine CPU per episode, ms | release to AVAILABLE p50 / p90, ms | 100 MB episode: release to AVAILABLE, ms | memory per idle session, MiB | private disk per idle session, KiB |
|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|
${results.map(row).join('\n')}

${ratios.join('\n')}
- CPU per episode: the broker process and the pool containers' cpuacct cgroups (the engine's work left out), then the whole machine's (other users' work on it included).
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
