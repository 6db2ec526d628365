/**
 * Pool-level figures: release-to-AVAILABLE on a 1 x 1 pool, episodes on pools sized to each
 * concurrency (a broker per size), the output flood, the 1024-session warm-up and its floor.
 */
import type { ConcResult, DockerStartResult, EpisodeFloorResult, FloodResult, OpenLoopResult, RawOpenResult, SeqResult } from '../protocol';
import { fmtLatency, type BenchContext } from '../lib/context';
import { histogram } from '../lib/metricsText';
import { median, sleep } from '../lib/stats';
import { settle } from '../lib/settle';
import { CLEANUP_METRIC, cpuNote, errors, forksNote, idleRss, mb, runEpisodes, sessionCpuNote } from './single';
import type { BrokerProcess } from '../lib/brokerProcess';
import { EPISODE_FLOOR_LEVELS, episodeRatio, type Results } from '../lib/results';

/** Sessions per container in the episode pools, and in the episode floor's containers. */
const PER_CONTAINER = 8;

/**
 * Opens the episode floor's shells at `level` (client/episodeFloor.ts): `level` raw shells in
 * ceil(level / 8) containers (local: directories), kept open for its windows (episodeFloorRun).
 */
async function openEpisodeFloor(ctx: BenchContext, level: number): Promise<void> {
  const { plan } = ctx;
  ctx.mark(`floor: opening ${level} raw ${plan.backend} shells for the episode floor`);
  const open = await ctx.job<{ sessions: number; openMs: number }>({ kind: 'episodeFloorOpen', backend: plan.backend, image: plan.image, concurrency: level, perContainer: PER_CONTAINER }, 600_000);
  ctx.log(`episode floor: ${open.sessions} shells open in ${(open.openMs / 1000).toFixed(1)} s`);
}

/** One window of the episode floor on its open shells, the same window as the broker's episodes at that level. */
async function episodeFloor(ctx: BenchContext, level: number, when = ''): Promise<EpisodeFloorResult> {
  const { plan } = ctx;
  const { rampMs, durationMs } = plan.episodeWindow(level);
  ctx.mark(`floor: ${level} raw ${plan.backend} shells, each episode exec -c a fresh bash + 5 x \`true\`${when ? ` (${when})` : ''}`);
  const job = { kind: 'episodeFloorRun', rampMs, durationMs } as const;
  const floor = await ctx.withCpu(`episode floor x${level}${when ? ` (${when})` : ''}`, () => ctx.job<EpisodeFloorResult>(job, rampMs + durationMs + 600_000));
  ctx.log(
    `episode floor x${level}: ${floor.opsPerSec.toFixed(1)} episodes/s; fresh bash p50 ${floor.exec.p50.toFixed(1)} ms, p99 ${floor.exec.p99.toFixed(1)} ms; ` +
      `\`true\` p50 ${floor.command.p50.toFixed(2)} ms (${floor.sessions} shells opened in ${(floor.openMs / 1000).toFixed(1)} s)${forksNote(floor.forks)}${sessionCpuNote(floor.sessionCpu)}${cpuNote(floor)}${errors(floor.errors, floor.firstError)}`,
  );
  return floor;
}

/**
 * Episodes arriving open-loop at a fraction of the closed loop's rate just measured on this broker:
 * the acquire latency a rollout sees below saturation.
 */
async function openLoopEpisodes(ctx: BenchContext, broker: BrokerProcess, entry: Results['episodes'][number]): Promise<void> {
  const { fraction, durationMs, arrivals } = ctx.plan.openLoop;
  const ratePerSec = fraction * entry.result.opsPerSec;
  if (!(ratePerSec > 0)) return;
  ctx.mark(`broker ${entry.containers} x 8: episodes arriving open-loop at ${ratePerSec.toFixed(1)}/s (${fraction * 100}% of ${entry.result.opsPerSec.toFixed(1)}/s)`);
  const drainMs = 60_000;
  const job = { kind: 'episodesOpen', url: broker.url, ratePerSec, arrivals, durationMs, maxOutstanding: 4 * entry.sessions, drainMs } as const;
  const o = await ctx.withCpu(`open-loop episodes at ${ratePerSec.toFixed(0)}/s, pool of ${entry.sessions}`, () => ctx.job<OpenLoopResult>(job, durationMs + drainMs + 60_000));
  entry.openLoop = o;
  ctx.log(
    `open loop: ${o.started} arrivals in ${(o.windowMs / 1000).toFixed(1)} s, ${o.completed} completed, ${o.dropped} dropped; ` +
      `acquire p50 ${o.acquire.p50.toFixed(1)} ms, p99 ${o.acquire.p99.toFixed(1)} ms; episode p50 ${o.episode.p50.toFixed(1)} ms${errors(o.errors, o.firstError)}`,
  );
}

/**
 * Rounds of [the episode floor, the broker's episodes, the same in 5 requests], one window each, the
 * floor's shells and the broker both kept up throughout (each idles while the other runs): a shared
 * machine's other work comes and goes within a minute, and each round's ratios are of windows seconds
 * apart. Recorded: the round with the median episodes/s ratio as the level's entry, every round in it.
 */
async function episodeRounds(ctx: BenchContext, broker: BrokerProcess, level: number, containers: number): Promise<Results['episodes'][number]> {
  const rounds: NonNullable<Results['episodes'][number]['rounds']> = [];
  const entries: Results['episodes'][number][] = [];
  for (let round = 1; round <= ctx.plan.episodeRounds; round++) {
    const floor = await episodeFloor(ctx, level, `round ${round} of ${ctx.plan.episodeRounds}`);
    const entry = await runEpisodes(ctx, broker, level, containers, floor, false);
    entries.push(entry);
    rounds.push({ floor, plain: entry.result, ...(entry.fewer ? { fewer: entry.fewer } : {}) });
  }
  const byRatio = entries.map((e, i) => ({ e, ratio: e.result.opsPerSec / (rounds[i].floor.opsPerSec || NaN) })).sort((a, b) => a.ratio - b.ratio);
  const entry = { ...byRatio[Math.floor((byRatio.length - 1) / 2)].e, rounds };
  ctx.results.episodes.push(entry);
  ctx.log(`episodes x${level} / floor, by round: ${rounds.map((r) => (r.plain.opsPerSec / r.floor.opsPerSec).toFixed(2)).join(', ')}; median ${episodeRatio(entry)?.toFixed(2)}x`);
  return entry;
}

export async function releasePhase(ctx: BenchContext): Promise<void> {
  ctx.mark('broker 1 x 1: release-to-AVAILABLE');
  await ctx.withBroker({ name: '1x1', containers: 1, perContainer: 1 }, async (broker) => {
    const client = await ctx.job<SeqResult>({ kind: 'releaseToAvailable', url: broker.url, n: ctx.plan.releaseN, maxMs: 60_000 }, 120_000);
    const cleanup = histogram(await broker.metrics(), CLEANUP_METRIC);
    ctx.results.release = { client, cleanup };
    ctx.log(`acquire right after release: ${fmtLatency(client.latency)}${errors(client.errors)}`);
    ctx.log(`broker_cleanup_duration_seconds: p50 ~${cleanup.p50Ms.toFixed(2)} ms, mean ${cleanup.meanMs.toFixed(2)} ms (n=${cleanup.count})`);
  });
}

/** 64 raw BashSessions driven at once with `true`: the throughput the episodes at 64 are held to. */
async function rawAt64(ctx: BenchContext): Promise<void> {
  const { plan } = ctx;
  ctx.mark(`floor: 64 raw ${plan.backend} sessions running \`true\` at once`);
  await ctx.job<RawOpenResult>({ kind: 'rawOpen', backend: plan.backend, transport: 'default', containers: 8, perContainer: 8, image: plan.image, concurrency: 16 }, 300_000);
  try {
    const job = { kind: 'conc', target: { via: 'raw', transport: 'default' }, command: 'true', expectBytes: 0, concurrency: 64, rampMs: 1000, durationMs: plan.raw64Ms } as const;
    ctx.results.rawAt64 = await ctx.withCpu('raw true x64', () => ctx.job<ConcResult>(job, plan.raw64Ms + 120_000));
    ctx.log(`raw true x64: ${ctx.results.rawAt64.opsPerSec.toFixed(0)}/s, ${fmtLatency(ctx.results.rawAt64.latency)}`);
  } finally {
    await ctx.job({ kind: 'rawClose' }, 300_000);
  }
}

/** 64 leases held and driven at once with `true` through the broker: set beside rawAt64 (same command, same concurrency). */
async function brokerAt64(ctx: BenchContext, url: string): Promise<void> {
  ctx.mark('broker 8 x 8: 64 busy sessions running `true` at once');
  const job = { kind: 'conc', target: { via: 'broker', url }, command: 'true', expectBytes: 0, concurrency: 64, rampMs: 1000, durationMs: ctx.plan.raw64Ms } as const;
  ctx.results.brokerAt64 = await ctx.withCpu('broker true x64', () => ctx.job<ConcResult>(job, ctx.plan.raw64Ms + 120_000));
  ctx.log(`broker true x64: ${ctx.results.brokerAt64.opsPerSec.toFixed(0)}/s, ${fmtLatency(ctx.results.brokerAt64.latency)}`);
}

interface WarmupRound {
  brokerMs: number;
  floorMs?: number;
}

/**
 * All warm-up rounds but the last (which also serves the idle RSS and the episodes at its size):
 * Docker's floor, then a broker that warms up and stops. Both take ~20 s and vary by +-30% from one
 * minute to the next on a shared machine; measured in turn, a round's two share its noise.
 */
async function extraWarmupRounds(ctx: BenchContext, containers: number): Promise<WarmupRound[]> {
  const rounds: WarmupRound[] = [];
  if (ctx.plan.backend !== 'docker') return rounds; // no floor to pair with
  for (let round = 1; round < ctx.plan.warmup.rounds; round++) {
    const floor = await warmupFloor(ctx);
    await settleBeforeWarmup(ctx);
    ctx.mark(`broker ${containers} x 8: warm-up, round ${round} of ${ctx.plan.warmup.rounds}`);
    const brokerMs = await ctx.withBroker({ name: `${containers}x8-round${round}`, containers, perContainer: 8 }, async (_broker, warmMs) => warmMs);
    rounds.push({ brokerMs, floorMs: floor?.ms });
  }
  return rounds;
}

function warmupSummary(rounds: WarmupRound[]): { brokerMs: number; floorMs?: number; ratio?: number } {
  const brokerMs = median(rounds.map((r) => r.brokerMs));
  const paired = rounds.filter((r): r is Required<WarmupRound> => r.floorMs !== undefined);
  if (paired.length === 0) return { brokerMs };
  return { brokerMs, floorMs: median(paired.map((r) => r.floorMs)), ratio: median(paired.map((r) => r.brokerMs / r.floorMs)) };
}

function logWarmup(ctx: BenchContext, rounds: WarmupRound[], medianRatio: number | undefined): void {
  if (rounds.length < 2) return;
  const each = rounds.map((r) => (r.floorMs === undefined ? `${(r.brokerMs / 1000).toFixed(1)} s` : `${(r.brokerMs / r.floorMs).toFixed(2)}x`));
  ctx.log(`warm-up rounds (broker / Docker's start): ${each.join(', ')}; median ${medianRatio?.toFixed(2) ?? '-'}x`);
}

/** Both sides of a warm-up round start on a quiet machine (lib/settle.ts); the wait is logged. */
async function settleBeforeWarmup(ctx: BenchContext): Promise<void> {
  const s = await settle(ctx.results.machine.cores);
  const how = s.settled ? 'quiet' : `still ${s.busyCores.toFixed(2)} cores busy, going on`;
  ctx.log(`waited ${(s.waitedMs / 1000).toFixed(1)} s for the machine to settle (${how})`);
}

/** Docker's own time to create and start the warm-up's containers (the local backend has no such floor). */
async function warmupFloor(ctx: BenchContext): Promise<{ label: string; ms: number; dockerStart: DockerStartResult } | null> {
  if (ctx.plan.backend !== 'docker') return null;
  const { containers } = ctx.plan.warmup;
  await settleBeforeWarmup(ctx);
  ctx.mark(`floor: Docker creates and starts ${containers} containers, 8 at once`);
  const ds = await ctx.job<DockerStartResult>({ kind: 'dockerStart', image: ctx.plan.image, count: containers, concurrency: 8 }, 600_000);
  ctx.log(`docker create+start x${containers}: ${(ds.createStartMs / 1000).toFixed(1)} s (removal ${(ds.removeMs / 1000).toFixed(1)} s)`);
  ctx.results.cpu[`docker create+start x${containers} (floor)`] = ds.cpu;
  return { label: `Docker create+start of ${containers} containers, 8 at once`, ms: ds.createStartMs, dockerStart: ds };
}

/** 64 leases flood at once; RSS is sampled from /proc every 100 ms while they do. */
async function floodPhase(ctx: BenchContext): Promise<void> {
  const { sessions, bytesPerSession, capBytes } = ctx.plan.flood;
  ctx.mark(`broker 8 x 8: output flood, ${sessions} x ${bytesPerSession / 1e6} MB (BROKER_MAX_OUTPUT_BYTES=${capBytes})`);
  const spec = { name: '8x8-flood', containers: 8, perContainer: 8, env: { BROKER_MAX_OUTPUT_BYTES: String(capBytes) } };
  await ctx.withBroker(spec, async (broker) => {
    const before = await idleRss(broker);
    const { result, peak } = await broker.peakRssDuring(ctx.job<FloodResult>({ kind: 'flood', url: broker.url, sessions, bytesPerSession, timeoutS: 240 }, 300_000));
    const after = await broker.rssBytes();
    const streamedMBps = (sessions * bytesPerSession) / 1e6 / (result.wallMs / 1000);
    ctx.results.rss.flood = { sessions, bytesPerSession, capBytes, wallMs: result.wallMs, streamedMBps, rssBeforeBytes: before, rssPeakBytes: peak, rssAfterBytes: after, errors: result.errors };
    ctx.log(`flood: ${(result.wallMs / 1000).toFixed(1)} s, ${streamedMBps.toFixed(0)} MB/s; RSS ${mb(before)} -> peak ${mb(peak)} -> ${mb(after)}${errors(result.errors, result.firstError)}`);
  });
}

/** Episodes on pools above 8 sessions, the flood after the 64 pool, the warm-up on the 128-container pool. */
export async function poolPhases(ctx: BenchContext): Promise<void> {
  const { plan, results } = ctx;
  const wantEpisodes = plan.phases.has('episodes');
  const sizes = wantEpisodes ? plan.levels.filter((l) => l > 8) : [];
  const warmContainers = plan.warmup.containers;
  if (plan.phases.has('warmup') && !sizes.some((l) => Math.ceil(l / 8) === warmContainers)) sizes.push(warmContainers * 8);
  for (const level of sizes.sort((a, b) => a - b)) {
    const containers = Math.ceil(level / 8);
    if (level === 64 && wantEpisodes) await rawAt64(ctx);
    const episodesHere = wantEpisodes && plan.levels.includes(level);
    // Before the warm-up's rounds, which want a quiet machine between their floor and their broker.
    const floorHere = episodesHere && plan.phases.has('floor') && (EPISODE_FLOOR_LEVELS as readonly number[]).includes(level);
    if (floorHere) await openEpisodeFloor(ctx, level);
    const isWarmup = plan.phases.has('warmup') && containers === warmContainers;
    const rounds: WarmupRound[] = isWarmup ? await extraWarmupRounds(ctx, containers) : [];
    const floor = isWarmup ? await warmupFloor(ctx) : null;
    if (isWarmup) await settleBeforeWarmup(ctx);
    ctx.mark(`broker ${containers} x 8${isWarmup ? ': warm-up, idle RSS' : ''}${episodesHere ? `, episodes at ${level}` : ''}`);
    const warmCpuLabel = isWarmup ? `warm-up of ${containers * 8} sessions` : undefined;
    let entry: Results['episodes'][number] | undefined;
    try {
    await ctx.withBroker({ name: `${containers}x8`, containers, perContainer: 8 }, async (broker, warmMs) => {
      if (isWarmup) {
        rounds.push({ brokerMs: warmMs, floorMs: floor?.ms });
        const summary = warmupSummary(rounds);
        results.warmup = { sessions: broker.total, containers, ...summary, floor: floor?.label, rounds, dockerStart: floor?.dockerStart };
        logWarmup(ctx, rounds, summary.ratio);
        results.rss.at1024 = await idleRss(broker);
        ctx.log(`RSS at ${broker.total} idle sessions: ${mb(results.rss.at1024)}`);
        // An idle pool still costs: one round of container health checks every BROKER_HEALTH_INTERVAL (5 s).
        await ctx.withCpu(`idle pool of ${broker.total} sessions, 6 s`, () => sleep(6000));
      }
      if (level === 64 && wantEpisodes) await brokerAt64(ctx, broker.url);
      if (!episodesHere) return;
      entry = floorHere ? await episodeRounds(ctx, broker, level, containers) : await runEpisodes(ctx, broker, level, containers);
      if (plan.phases.has('open')) await openLoopEpisodes(ctx, broker, entry);
    }, warmCpuLabel);
    } finally {
      if (floorHere) await ctx.job({ kind: 'episodeFloorClose' }, 600_000);
    }
    if (level === 64 && plan.phases.has('flood')) await floodPhase(ctx);
  }
  if (plan.phases.has('flood') && !sizes.includes(64)) await floodPhase(ctx);
  const { at8, at1024 } = results.rss;
  if (at8 !== undefined && at1024 !== undefined) results.rss.perSessionBytes = (at1024 - at8) / (plan.warmup.containers * plan.warmup.perContainer - 8);
}
