/**
 * `node --cpu-prof` profiles of the broker, each on a broker of its own so the profiler does not
 * distort the measured runs: during the execute-`true` figures (sequential, then 8 sessions at
 * once), and, in a full run, during episodes at 64 (where recycling sessions enters).
 */
import fs from 'node:fs';
import path from 'node:path';
import { COMMANDS, type ConcResult, type EpisodeResult, type SeqResult } from '../protocol';
import type { BenchContext, PoolSpec } from '../lib/context';
import { REPO_DIR, type BrokerProcess } from '../lib/brokerProcess';
import { summarizeProfile, type ProfileSummary } from '../lib/profile';
import { CONC_SESSIONS } from './single';

const PROFILE_MS = 6000;
const TOP_N = 15;

async function profiled(ctx: BenchContext, spec: PoolSpec, work: (broker: BrokerProcess) => Promise<void>): Promise<ProfileSummary | undefined> {
  const name = `${spec.name}-${ctx.plan.backend}.cpuprofile`;
  const file = path.join(ctx.logDir, name);
  fs.rmSync(file, { force: true });
  const nodeFlags = ['--cpu-prof', '--cpu-prof-dir', ctx.logDir, '--cpu-prof-name', name];
  await ctx.withBroker({ ...spec, nodeFlags }, work);
  // Written when the broker exits (through process.exit, after SIGTERM).
  if (!fs.existsSync(file)) {
    ctx.results.notes.push(`no CPU profile was written to ${file}`);
    return undefined;
  }
  const summary = summarizeProfile(file, REPO_DIR, TOP_N);
  const top = summary.top.slice(0, 5).map((e) => `${e.fn} ${e.pct.toFixed(1)}%`);
  ctx.log(`profile top self time: ${top.join(', ')}`);
  return summary;
}

export async function profilePhase(ctx: BenchContext): Promise<void> {
  const { plan } = ctx;
  ctx.mark('broker 1 x 8 under node --cpu-prof: execute `true`');
  ctx.results.profile = await profiled(ctx, { name: 'profile-execute', containers: 1, perContainer: 8 }, async (broker) => {
    const target = { via: 'broker', url: broker.url } as const;
    const { command, expectBytes } = COMMANDS.true;
    await ctx.job<SeqResult>({ kind: 'seq', target, command, expectBytes, n: plan.seq.true.n, warmup: 0, maxMs: 20_000 }, 120_000);
    const conc = { kind: 'conc', target, command, expectBytes, concurrency: CONC_SESSIONS, rampMs: 0, durationMs: PROFILE_MS } as const;
    await ctx.job<ConcResult>(conc, PROFILE_MS + 120_000);
  });
  if (plan.quick) return;
  ctx.mark('broker 8 x 8 under node --cpu-prof: episodes at 64');
  ctx.results.profileEpisodes = await profiled(ctx, { name: 'profile-episodes', containers: 8, perContainer: 8 }, async (broker) => {
    const job = { kind: 'episodes', url: broker.url, concurrency: 64, rampMs: 0, durationMs: PROFILE_MS, drainMs: 60_000 } as const;
    await ctx.job<EpisodeResult>(job, PROFILE_MS + 180_000);
  });
}
