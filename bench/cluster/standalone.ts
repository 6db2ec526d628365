/**
 * `npm run bench:cluster -- --base <commit>`: the standalone broker (the default role) of this build
 * against the same broker built from `<commit>`, in one run, so that what the cluster work put on the
 * standalone path shows as a ratio rather than as a difference between two runs on a shared machine.
 * Both brokers run side by side (same pool shape, same backend); in rounds, each figure alternates
 * between them:
 *
 * - execute `true` one at a time on one lease each, interleaved in blocks of 25 (drive.ts);
 * - executes of `true` on `busy` leases at once, one window each, the order swapped by round;
 * - episodes (acquire, `echo 1` .. `echo 5`, release) by 64 clients, one window each, the order swapped.
 *
 * Each figure's ratio (this / base) is taken per round; the report gives their median against a ±5%
 * band, and the spread of the rounds' ratios (how far noise alone moves one).
 */
import { BrokerHttp } from '../client/brokerHttp';
import { runClosedLoop, runInterleaved } from '../client/drive';
import { episodes } from '../client/poolJobs';
import { BrokerProcess, type BrokerSpec } from '../lib/brokerProcess';
import type { Machine } from '../lib/machine';
import { median } from '../lib/stats';
import { BENCH_DEPLOYMENT } from '../protocol';

/** The band a figure of this build may move from the base's, as a ratio. */
export const STANDALONE_BAND = 0.05;
const PER_CONTAINER = 8;
const WARM_MS = 300_000;
/** Both brokers reclaim a lease idle this long (s); no measured lease is idle half as long. */
const IDLE_RECLAIM_S = 60;
const STOP_MS = 30_000;
const SEQ_MAX_MS = 120_000;

export interface StandalonePlan {
  rounds: number;
  seqN: number;
  busy: number;
  windowMs: number;
  /** Each window's ramp before it, and how long its workers may take to finish after it. */
  rampMs: number;
  drainMs: number;
  sessions: number;
  episodeClients: number;
  backend: 'local' | 'docker';
  image: string;
}

/** One side's figures in one round. */
export interface SideFigures {
  seqP50: number;
  seqP99: number;
  busyOpsPerSec: number;
  busyP50: number;
  episodesPerSec: number;
  acquireP50: number;
  errors: number;
}

export interface StandaloneRound {
  current: SideFigures;
  base: SideFigures;
}

/** A figure's ratios this / base: per round, their median, and whether the median is inside the band. */
export interface RatioFigure {
  name: string;
  /** 'lower' for latencies (a ratio above 1 is a slowdown), 'higher' for rates. */
  better: 'lower' | 'higher';
  current: number;
  base: number;
  ratios: number[];
  median: number;
  verdict: 'within' | 'better' | 'worse';
}

export interface StandaloneRun {
  command: string;
  startedAt: string;
  durationS: number;
  machine: Machine;
  loadAvgAtEnd: number[];
  base: { commit: string; shortHash: string; subject: string };
  plan: StandalonePlan;
  rounds: StandaloneRound[];
  figures: RatioFigure[];
}

/** The two brokers, warm; `onStarted` sees each process as it is spawned (for the run's stop). */
export async function startPair(
  plan: StandalonePlan,
  baseEntry: string,
  logDir: string,
  onStarted: (b: BrokerProcess) => void,
): Promise<{ current: BrokerProcess; base: BrokerProcess }> {
  const spec = (name: string, entry?: string): BrokerSpec => ({
    name,
    backend: plan.backend,
    containers: Math.ceil(plan.sessions / PER_CONTAINER),
    perContainer: PER_CONTAINER,
    image: plan.image,
    // A deployment each: on Docker a broker sweeps its deployment's containers at start. An acquire
    // its client gave up at the end of an episode window can still be granted: that lease has no
    // holder until the broker reclaims it idle, which each round waits for.
    env: { BROKER_DEPLOYMENT: `${BENCH_DEPLOYMENT}-${name}`, BROKER_SESSION_IDLE_TIMEOUT: String(IDLE_RECLAIM_S) },
    entry,
  });
  const started: BrokerProcess[] = [];
  for (const s of [spec('current'), spec('base', baseEntry)]) {
    const broker = await BrokerProcess.start(s, logDir);
    onStarted(broker);
    started.push(broker);
  }
  await Promise.all(started.map((b) => b.waitWarm(WARM_MS)));
  return { current: started[0], base: started[1] };
}

export async function stopPair(brokers: BrokerProcess[]): Promise<void> {
  await Promise.all(brokers.map((b) => b.stop(STOP_MS).catch(() => undefined)));
}

/** `first` then `second` when `inOrder`, else the other way; results in the arguments' order. */
async function alternate<T>(inOrder: boolean, first: () => Promise<T>, second: () => Promise<T>): Promise<[T, T]> {
  if (inOrder) {
    const a = await first();
    return [a, await second()];
  }
  const b = await second();
  return [await first(), b];
}

export async function standaloneRound(plan: StandalonePlan, pair: { current: BrokerProcess; base: BrokerProcess }, index: number, warmup: number): Promise<StandaloneRound> {
  const sides = [pair.current, pair.base];
  const clients = sides.map((b) => new BrokerHttp(b.url, plan.busy));
  const leases: string[][] = [[], []];
  try {
    await Promise.all(sides.map((b) => b.waitWarm(WARM_MS)));
    for (let i = 0; i < 2; i++) leases[i].push(await clients[i].acquire());
    const seq = await runInterleaved(
      clients.map((c, i) => () => c.executeChecked(leases[i][0], 'true', 0)),
      plan.seqN,
      warmup,
      SEQ_MAX_MS,
    );
    // The busy leases taken now: a lease idle through the first round's warm-up could be reclaimed.
    for (let i = 0; i < 2; i++) while (leases[i].length < plan.busy) leases[i].push(await clients[i].acquire());
    const busyWindow = (i: number) => () =>
      runClosedLoop(
        leases[i].map((id) => () => clients[i].executeChecked(id, 'true', 0)),
        { rampMs: plan.rampMs, durationMs: plan.windowMs, drainMs: plan.drainMs },
      );
    const busy = await alternate(index % 2 === 0, busyWindow(0), busyWindow(1));
    for (let i = 0; i < 2; i++) for (const id of leases[i].splice(0)) await clients[i].release(id);
    await Promise.all(sides.map((b) => b.waitWarm(WARM_MS)));
    // Before the first round's, one unmeasured window each (the acquire path cold, connections new).
    if (index === 0) for (const b of sides) await episodes(b.url, plan.episodeClients, plan.rampMs, plan.windowMs, plan.drainMs);
    const episodeWindow = (i: number) => () => episodes(sides[i].url, plan.episodeClients, plan.rampMs, plan.windowMs, plan.drainMs);
    const eps = await alternate(index % 2 === 1, episodeWindow(0), episodeWindow(1));
    const side = (i: number): SideFigures => ({
      seqP50: seq[i].latency.p50,
      seqP99: seq[i].latency.p99,
      busyOpsPerSec: busy[i].opsPerSec,
      busyP50: busy[i].latency.p50,
      episodesPerSec: eps[i].opsPerSec,
      acquireP50: eps[i].acquire.p50,
      errors: seq[i].errors + busy[i].errors + eps[i].errors,
    });
    return { current: side(0), base: side(1) };
  } finally {
    for (let i = 0; i < 2; i++) for (const id of leases[i]) await clients[i].release(id).catch(() => undefined);
    await Promise.all(clients.map((c) => c.close()));
  }
}

export function ratioFigures(rounds: StandaloneRound[]): RatioFigure[] {
  const figure = (name: string, better: RatioFigure['better'], pick: (s: SideFigures) => number): RatioFigure => {
    const ratios = rounds.map((r) => pick(r.current) / pick(r.base));
    const mid = median(ratios);
    const slower = better === 'lower' ? mid - 1 : 1 - mid;
    return {
      name,
      better,
      current: median(rounds.map((r) => pick(r.current))),
      base: median(rounds.map((r) => pick(r.base))),
      ratios,
      median: mid,
      verdict: Math.abs(mid - 1) <= STANDALONE_BAND ? 'within' : slower > 0 ? 'worse' : 'better',
    };
  };
  return [
    figure('execute `true` one at a time, p50 (ms)', 'lower', (s) => s.seqP50),
    figure('execute `true` one at a time, p99 (ms)', 'lower', (s) => s.seqP99),
    figure('executes/s on the busy leases', 'higher', (s) => s.busyOpsPerSec),
    figure('execute `true` on the busy leases, p50 (ms)', 'lower', (s) => s.busyP50),
    figure('episodes/s at the episode clients', 'higher', (s) => s.episodesPerSec),
    figure('acquire p50 in the episodes (ms)', 'lower', (s) => s.acquireP50),
  ];
}

const f3 = (v: number): string => (Math.abs(v) >= 100 ? v.toFixed(1) : v.toFixed(3));

export function renderStandaloneReport(run: StandaloneRun): string {
  const { machine: mc, plan } = run;
  const name = (f: RatioFigure): string => f.name.replace('the busy leases', `${plan.busy} leases`).replace('the episode clients', `${plan.episodeClients} clients`);
  const errors = run.rounds.reduce((n, r) => n + r.current.errors + r.base.errors, 0);
  const headline = run.figures.filter((f) => !f.name.includes('p99') && !f.name.includes('acquire'));
  const outside = headline.filter((f) => f.verdict === 'worse');
  return [
    `# The standalone broker of this build against ${run.base.shortHash}, same run (${plan.backend} backend)`,
    '',
    `\`${run.command}\`, ${run.startedAt}, ${run.durationS.toFixed(0)} s; this build: commit ${mc.gitCommit}${mc.gitDirty ? ' (src/ with uncommitted changes)' : ''}; ` +
      `base: ${run.base.shortHash} (${run.base.subject}); ${mc.cores} x ${mc.cpuModel}, node ${mc.node}, load average at start ${mc.loadAvgAtStart.join(' ')}, at end ${run.loadAvgAtEnd.join(' ')}`,
    '',
    `**Band: each figure of this build within ±${STANDALONE_BAND * 100}% of the base's (median of the rounds' ratios this / base): ` +
      `${outside.length === 0 ? 'every headline figure within or better' : `outside on the worse side: ${outside.map(name).join('; ')}`}.**`,
    '',
    `| figure | this build | base | this / base (median of ${run.rounds.length} rounds) | the rounds' ratios | verdict |`,
    '|---|---|---|---|---|---|',
    ...run.figures.map(
      (f) => `| ${name(f)} | ${f3(f.current)} | ${f3(f.base)} | ${f.median.toFixed(3)} | ${f.ratios.map((r) => r.toFixed(3)).join(', ')} | ${f.verdict}${f.better === 'lower' ? ' (lower is better)' : ''} |`,
    ),
    '',
    `Errors in all windows: ${errors}.`,
    '',
    '## What was measured',
    '',
    `- Two brokers in the standalone role, each \`node dist/index.js\` of its own build in a process of its own, ${plan.backend} backend, ${plan.sessions} sessions each ` +
      `(${plan.sessions / PER_CONTAINER} x ${PER_CONTAINER}), on 127.0.0.1; the base built by the bench itself from a temporary git worktree of ${run.base.shortHash}, removed at the end. ` +
      "The client is the bench's own process (undici, keep-alive, one connection per concurrent caller).",
    `- One at a time: ${plan.seqN} executes of \`true\` per broker and round on one lease, interleaved in blocks of 25; the first round warms each with 8,000 unmeasured calls.`,
    `- Busy: ${plan.busy} leases per broker, each looping execute \`true\`, ${plan.windowMs} ms after a ${plan.rampMs} ms ramp, one broker then the other (the order swapped each round).`,
    `- Episodes: ${plan.episodeClients} clients each looping acquire, \`echo 1\` .. \`echo 5\`, release, ${plan.windowMs} ms after a ${plan.rampMs} ms ramp, one broker then the other ` +
      '(the order swapped each round; the first round runs one unmeasured window on each first).',
    "- A verdict is on the median of the rounds' own ratios; the ratios of the rounds show how far the machine's noise moves one figure between two windows.",
    '',
  ].join('\n');
}
