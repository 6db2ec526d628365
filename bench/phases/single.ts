/**
 * Single-command figures (execute `true`, `echo hello`, 64 KiB, 1 MiB) on the broker and on its two
 * floors, plus acquire and the small episodes, all on a 1 x 8 pool.
 */
import { COMMANDS, type CommandName, type ConcResult, type EpisodeFloorResult, type EpisodeResult, type FloodResult, type ForkCount, type SeqResult, type SessionCpu, type Target } from '../protocol';
import { loadConfig } from '../../src/config/config';
import { fmtLatency, type BenchContext } from '../lib/context';
import { episodeCpuMs, type PathFigures, type Results } from '../lib/results';
import type { BrokerProcess } from '../lib/brokerProcess';
import { sleep } from '../lib/stats';
import { histogram, metricValue } from '../lib/metricsText';
import { listenOverflows } from '../lib/netstat';
import { NoopServer } from '../lib/children';
import { rolloutExtras } from './rolloutExtras';

export const CLEANUP_METRIC = 'broker_cleanup_duration_seconds';

const SEQ_MAX_MS = 20_000;
const SLACK_MS = 90_000;
export const CONC_SESSIONS = 8;
const DEFAULT_MAX_OUTPUT_BYTES = loadConfig({}).maxOutputBytes;

type PathName = 'broker' | 'raw' | 'rawExec' | 'noop' | 'app';
const PATH_LABELS: Record<PathName, string> = {
  broker: 'broker',
  raw: 'raw',
  rawExec: 'raw docker exec',
  noop: 'no-op HTTP',
  app: 'broker app, stub pool',
};
/** The docker exec floor runs the small commands only: it exists for the execute target. */
const EXEC_FLOOR_COMMANDS: CommandName[] = ['true', 'echo'];

/**
 * One command on the broker and its floors: sequential latency with the paths interleaved (one
 * operation on each in turn, so a noisy neighbour hits all alike), then throughput with 8 sessions
 * on each path in turn. The HTTP floors only answer `true`: their cost does not depend on the command.
 */
async function compareCommand(ctx: BenchContext, brokerUrl: string, name: CommandName): Promise<Record<PathName, PathFigures>> {
  const { command, expectBytes } = COMMANDS[name];
  const targets: Partial<Record<PathName, Target>> = { broker: { via: 'broker', url: brokerUrl }, raw: { via: 'raw', transport: 'default' } };
  if (ctx.plan.backend === 'docker' && EXEC_FLOOR_COMMANDS.includes(name)) targets.rawExec = { via: 'raw', transport: 'exec' };
  if (name === 'true') {
    targets.noop = { via: 'noop', url: ctx.http.noop.url };
    targets.app = { via: 'noop', url: ctx.http.app.url };
  }
  const paths = Object.keys(targets) as PathName[];
  const { n, warmup } = ctx.plan.seq[name];
  const seqJob = { kind: 'seqCompare', targets: paths.map((p) => targets[p]!), command, expectBytes, n, warmup, maxMs: SEQ_MAX_MS * 2 } as const;
  const seqs = await ctx.job<SeqResult[]>(seqJob, SEQ_MAX_MS * 2 + SLACK_MS);
  const out = {} as Record<PathName, PathFigures>;
  paths.forEach((p, i) => {
    out[p] = { seq: seqs[i] };
    ctx.log(`${PATH_LABELS[p]} ${name}: ${fmtLatency(seqs[i].latency)}${errors(seqs[i].errors)}`);
  });
  if (!ctx.plan.concCommands.includes(name)) return out;
  for (const p of paths) {
    const job = { kind: 'conc', target: targets[p]!, command, expectBytes, concurrency: CONC_SESSIONS, rampMs: 300, durationMs: ctx.plan.concMs } as const;
    const conc = await ctx.withCpu(`${PATH_LABELS[p]} ${name} x${CONC_SESSIONS}`, () => ctx.job<ConcResult>(job, ctx.plan.concMs + SLACK_MS));
    out[p].conc = conc;
    ctx.log(`${PATH_LABELS[p]} ${name} x${CONC_SESSIONS}: ${conc.opsPerSec.toFixed(0)}/s${errors(conc.errors, conc.firstError)}`);
  }
  return out;
}

/**
 * The relay floor beside the no-op, as a pair of their own (added to the broker's interleaving it
 * would change what the broker's figures are measured beside): what a second process hop costs here.
 */
async function relayFloor(ctx: BenchContext): Promise<void> {
  const { n, warmup } = ctx.plan.seq.true;
  const targets = [ctx.http.noop, ctx.http.relay].map((s) => ({ via: 'noop', url: s.url }) as const);
  const job = { kind: 'seqCompare', targets, command: 'true', expectBytes: 0, n, warmup, maxMs: SEQ_MAX_MS } as const;
  const [noop, relay] = await ctx.job<SeqResult[]>(job, SEQ_MAX_MS + SLACK_MS);
  ctx.results.relayFloor = { noop, relay };
  ctx.log(`no-op HTTP / relay to cat, a pair of their own: p50 ${noop.latency.p50.toFixed(3)} / ${relay.latency.p50.toFixed(3)} ms${errors(noop.errors + relay.errors)}`);
}

/**
 * The least server over the broker's own sessions (shellServer.ts) in the broker's place, beside the
 * same raw, no-op and stub-app paths as the broker's execute `true` (and on docker the docker exec
 * floor): its own interleaving, the same shape, so each path has been idle as long as in the
 * broker's. Tells what any HTTP server over this session layer pays here, and so what the broker's
 * own code adds.
 */
async function shellFloor(ctx: BenchContext, shellUrl: string): Promise<void> {
  const { n, warmup } = ctx.plan.seq.true;
  // The broker's order and company (compareCommand), the docker exec floor included: a docker exec
  // between two operations leaves the others colder, so leaving it out would favour this server.
  const docker = ctx.plan.backend === 'docker';
  const targets: Target[] = [
    { via: 'noop', url: shellUrl },
    { via: 'raw', transport: 'default' },
    ...(docker ? [{ via: 'raw', transport: 'exec' } as const] : []),
    { via: 'noop', url: ctx.http.noop.url },
    { via: 'noop', url: ctx.http.app.url },
  ];
  const job = { kind: 'seqCompare', targets, command: 'true', expectBytes: 0, n, warmup, maxMs: SEQ_MAX_MS * 2 } as const;
  const seqs = await ctx.job<SeqResult[]>(job, SEQ_MAX_MS * 2 + SLACK_MS);
  const [shell, raw, rawExec] = docker ? seqs : [seqs[0], seqs[1], undefined];
  const [noop, app] = seqs.slice(-2);
  ctx.results.shellFloor = { shell, raw, noop, app, ...(rawExec ? { rawExec } : {}) };
  const over = (shell.latency.p50 - raw.latency.p50) / noop.latency.p50;
  ctx.log(
    `least server over one session / raw${docker ? ' / raw docker exec' : ''} / no-op / stub app: p50 ${seqs.map((x) => x.latency.p50.toFixed(3)).join(' / ')} ms ` +
      `(server - raw = ${over.toFixed(2)} x no-op)${errors(seqs.reduce((sum, x) => sum + x.errors, 0))}`,
  );
}

export function errors(n: number, first?: string): string {
  return n > 0 ? `  !! ${n} errors${first ? `: ${first}` : ''}` : '';
}

/** Idle RSS from /metrics once the pool has settled. */
export async function idleRss(broker: BrokerProcess): Promise<number> {
  await sleep(1500);
  return broker.rssBytes();
}

export function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** One lease floods at the default output cap: what a single big answer costs the broker's memory. */
async function singleFlood(ctx: BenchContext, broker: BrokerProcess): Promise<void> {
  const bytesPerSession = ctx.plan.flood.bytesPerSession;
  const before = broker.procMemory().rssBytes;
  const job = { kind: 'flood', url: broker.url, sessions: 1, bytesPerSession, timeoutS: 120 } as const;
  const { result, peak } = await broker.peakRssDuring(ctx.job<FloodResult>(job, 180_000));
  ctx.results.rss.singleFloodDefaultCap = { peakDeltaBytes: peak - before, capBytes: DEFAULT_MAX_OUTPUT_BYTES };
  ctx.log(`one ${bytesPerSession / 1e6} MB flood at the default cap: RSS ${mb(before)} -> peak ${mb(peak)}${errors(result.errors, result.firstError)}`);
}

/**
 * Episodes at `level` on a running broker; its cleanup histogram tells how long slots took to come
 * back. `floor`: the episode floor measured at this level just before (phases/pool.ts).
 */
export async function runEpisodes(
  ctx: BenchContext,
  broker: BrokerProcess,
  level: number,
  containers: number,
  floor?: EpisodeFloorResult,
  /** false: the caller records the entry (rounds: phases/pool.ts). */
  record = true,
): Promise<Results['episodes'][number]> {
  const { rampMs, durationMs } = ctx.plan.episodeWindow(level);
  const drainMs = 60_000;
  const sessionCgroups = await ctx.sessionCgroups(broker);
  const job = { kind: 'episodes', url: broker.url, concurrency: level, rampMs, durationMs, drainMs, countForks: true, sessionCgroups, brokerPid: broker.pid } as const;
  const baseline = await broker.metrics();
  const overflowsBefore = listenOverflows();
  const result = await ctx.withCpu(`episodes x${level}`, () => ctx.job<EpisodeResult>(job, rampMs + durationMs + drainMs + 60_000));
  const overflows = listenOverflows() - overflowsBefore;
  const after = await broker.metrics();
  const cleanup = histogram(after, CLEANUP_METRIC, baseline);
  // prom-client resets its event-loop delay histogram at every scrape: this is the job's.
  const eventLoopLagMs = { p99: metricValue(after, 'nodejs_eventloop_lag_p99_seconds') * 1000, max: metricValue(after, 'nodejs_eventloop_lag_max_seconds') * 1000 };
  const entry = { concurrency: level, containers, sessions: containers * 8, result, cleanup, listenOverflows: overflows, eventLoopLagMs, ...(floor ? { floor } : {}) };
  if (record) ctx.results.episodes.push(entry);
  ctx.log(
    `${level} connections opened in ${(result.connectMs / 1000).toFixed(2)} s (${result.connectErrors} failed); listen queue overflows: ${overflows}; ` +
      `broker event-loop delay p99 ${eventLoopLagMs.p99.toFixed(1)} ms, max ${eventLoopLagMs.max.toFixed(1)} ms`,
  );
  ctx.log(
    `episodes x${level}: ${result.opsPerSec.toFixed(1)} episodes/s (${result.executesPerSec.toFixed(0)} executes/s), ` +
      `${fmtLatency(result.latency)}; acquire p50 ${result.acquire.p50.toFixed(2)} ms; ` +
      `cleanup p50 ~${cleanup.p50Ms.toFixed(1)} ms${forksNote(result.forks)}${sessionCpuNote(result.sessionCpu)}${cpuNote(result)}${errors(result.errors, result.firstError)}`,
  );
  if (floor) ctx.log(`episodes x${level} / episode floor just before it: ${(result.opsPerSec / floor.opsPerSec).toFixed(2)}x`);
  if (floor && ctx.plan.phases.has('fewer')) {
    ctx.mark(`broker ${containers} x 8: the same episodes in 5 requests (startup command, release with the last execute)`);
    const fewer = await ctx.withCpu(`episodes x${level}, 5 requests`, () => ctx.job<EpisodeResult>({ ...job, variant: 'fewer' }, rampMs + durationMs + drainMs + 60_000));
    Object.assign(entry, { fewer });
    ctx.log(
      `episodes x${level} in 5 requests: ${fewer.opsPerSec.toFixed(1)} episodes/s, ${fmtLatency(fewer.latency)}${cpuNote(fewer)}${errors(fewer.errors, fewer.firstError)}` +
        ` (7 requests: ${result.opsPerSec.toFixed(1)}/s${cpuNote(result)})`,
    );
  }
  return entry;
}

/** The episode's CPU in the window, per process group (lib/results.ts episodeCpuMs). */
export function cpuNote(r: EpisodeResult | EpisodeFloorResult): string {
  const cpu = episodeCpuMs(r);
  if (!cpu) return '';
  const parts = [...('requestsPerEpisode' in r ? [`broker ${cpu.broker.toFixed(2)}`] : []), `client ${cpu.client.toFixed(2)}`, `sessions ${cpu.sessions.toFixed(2)}`];
  return `; CPU per episode ${cpu.total.toFixed(2)} ms (${parts.join(' + ')})`;
}

export function sessionCpuNote(cpu: SessionCpu | undefined): string {
  return cpu ? `; sessions' CPU ${cpu.msPerEpisode.toFixed(2)} ms per episode (${cpu.cores.toFixed(2)} cores, ${cpu.where})` : '';
}

export function forksNote(forks: ForkCount | undefined): string {
  return forks ? `; ${forks.perEpisode.toFixed(2)} processes created per episode (${forks.created} in the window, idle ${forks.idlePerSec.toFixed(1)}/s)` : '';
}

export async function singlePhase(ctx: BenchContext): Promise<void> {
  const { plan, results } = ctx;
  ctx.mark(`broker 1 x 8 beside its floors (raw ${plan.backend} sessions, no-op HTTP, broker app over a stub pool)`);
  const rawOpen = { kind: 'rawOpen', backend: plan.backend, containers: 1, perContainer: CONC_SESSIONS, image: plan.image, concurrency: 8 } as const;
  const shell = plan.commands.includes('true') ? NoopServer.startShell(plan.backend, plan.image) : null;
  shell?.catch(() => undefined); // awaited (and its failure reported) where it is used
  try {
    await ctx.job({ ...rawOpen, transport: 'default' }, 120_000);
    if (plan.backend === 'docker') await ctx.job({ ...rawOpen, transport: 'exec' }, 120_000);
    await ctx.withBroker({ name: '1x8', containers: 1, perContainer: 8 }, async (broker) => {
      results.rss.at8 = await idleRss(broker);
      ctx.log(`RSS at 8 idle sessions: ${mb(results.rss.at8)}`);
      for (const name of plan.commands) results.commands[name] = await compareCommand(ctx, broker.url, name);
      await relayFloor(ctx);
      await rolloutExtras(ctx, broker.url);
      if (shell) await shellFloor(ctx, (await shell).url);
      if (plan.phases.has('release')) {
        results.rawRespawn = await ctx.job<SeqResult>({ kind: 'rawRespawn', n: plan.releaseN, maxMs: 60_000 }, 180_000);
        ctx.log(`raw respawn (close + new shell + first answer): ${fmtLatency(results.rawRespawn.latency)}${errors(results.rawRespawn.errors)}`);
      }
      const acquire = { kind: 'acquireFree', url: broker.url, poolSize: 8, rounds: plan.acquireRounds, maxMs: 60_000 } as const;
      results.acquire = await ctx.job<SeqResult>(acquire, 120_000);
      ctx.log(`acquire (free sessions): ${fmtLatency(results.acquire.latency)}${errors(results.acquire.errors)}`);
      for (const level of plan.levels.filter((l) => l <= 8)) await runEpisodes(ctx, broker, level, 1);
      if (plan.phases.has('flood')) await singleFlood(ctx, broker);
    });
  } finally {
    await Promise.all([ctx.job({ kind: 'rawClose' }, 120_000), shell?.then((s) => s.close(), () => undefined)]);
  }
}
