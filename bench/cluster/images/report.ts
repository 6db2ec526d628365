/** The images bench's figures (run.ts) and its markdown report, with the goals checked. */
import type { Machine } from '../../lib/machine';
import { summarize } from '../../lib/stats';
import type { EpisodeSample } from './episodes';

export interface DiskSample {
  atMs: number;
  node: string;
  used: number;
  budget: number;
  evictions: number;
  pulls: number;
}

interface Phase {
  samples: EpisodeSample[];
  wallMs: number;
}

export interface ImagesRun {
  command: string;
  startedAt: string;
  machine: Machine;
  settings: { images: number; episodes: number; clients: number; zipf: number; engines: number; diskMb: number; sessionsPerContainer: number; seed: number };
  setupMs: number;
  rollout: Phase;
  ideal: Phase;
  container: Phase;
  disk: DiskSample[];
}

const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : '-');
const pct = (part: number, whole: number): string => (whole === 0 ? '-' : `${((100 * part) / whole).toFixed(1)}%`);
const rate = (p: Phase): number => p.samples.filter((s) => !s.error).length / (p.wallMs / 1000);

function latencies(samples: EpisodeSample[]): string {
  const s = summarize(samples.map((x) => x.acquireMs));
  return `${ms(s.p50)} / ${ms(s.p99)} (n = ${s.n})`;
}

function shares(samples: EpisodeSample[]): string {
  const n = samples.length;
  const count = (tier: string): number => samples.filter((s) => s.placement === tier).length;
  return `warm ${pct(count('warm'), n)}, held ${pct(count('held'), n)}, cold ${pct(count('cold'), n)} (of ${n})`;
}

/** The node's `image_cost` kinds (warm, started, pulled) as shares. */
function costs(samples: EpisodeSample[]): string {
  const n = samples.length;
  const count = (kind: string): number => samples.filter((s) => s.cost === kind).length;
  return `warm ${pct(count('warm'), n)}, started ${pct(count('started'), n)}, pulled ${pct(count('pulled'), n)} (of ${n})`;
}

export function renderImagesReport(run: ImagesRun): string {
  const ok = run.rollout.samples.filter((s) => !s.error);
  const byImage = new Map<string, EpisodeSample[]>();
  for (const s of ok) byImage.set(s.image, [...(byImage.get(s.image) ?? []), s]);
  const firsts: EpisodeSample[] = [];
  const afterFirstRound: EpisodeSample[] = [];
  const pullsPerImage: number[] = [];
  const nodesPerImage: number[] = [];
  for (const samples of byImage.values()) {
    const first = samples.reduce((a, b) => (b.startMs < a.startMs ? b : a));
    firsts.push(first);
    afterFirstRound.push(...samples.filter((s) => s.startMs >= first.acquiredAtMs));
    pullsPerImage.push(new Set(samples.filter((s) => s.cost === 'pulled').map((s) => s.node)).size);
    nodesPerImage.push(new Set(samples.map((s) => s.node)).size);
  }
  const warm = ok.filter((s) => s.cost === 'warm');
  const warmP50 = summarize(warm.map((s) => s.acquireMs)).p50;
  const warmShareAfter = afterFirstRound.filter((s) => s.placement === 'warm').length / Math.max(1, afterFirstRound.length);
  const histogram = (values: number[]): string =>
    [...new Set(values)].sort((a, b) => a - b).map((v) => `${v}: ${values.filter((x) => x === v).length}`).join(', ');
  const nodes = [...new Set(run.disk.map((d) => d.node))].sort();
  const diskRows = nodes.map((node) => {
    const own = run.disk.filter((d) => d.node === node);
    const peak = Math.max(...own.map((d) => d.used));
    const budget = own[0].budget;
    return { node, peak, budget, evictions: Math.max(...own.map((d) => d.evictions)), pullsPeak: Math.max(...own.map((d) => d.pulls)) };
  });
  const overBudget = diskRows.some((r) => r.peak > r.budget);
  const rollRate = rate(run.rollout);
  const idealRate = rate(run.ideal);
  const containerRate = rate(run.container);
  const errors = (p: Phase): string => {
    const e = p.samples.filter((s) => s.error);
    return e.length === 0 ? '0' : `${e.length} (first: ${e[0].error})`;
  };
  const goal = (pass: boolean): string => (pass ? 'PASS' : 'FAIL');
  const st = run.settings;
  const lines = [
    `# Images on demand: a rollout over ${st.images} task images on the ${st.engines}-engine rig`,
    '',
    `\`${run.command}\`, ${run.startedAt}; commit ${run.machine.gitCommit}${run.machine.gitDirty ? ' (src changed)' : ''}; ${run.machine.cores} x ${run.machine.cpuModel}, node ${run.machine.node}, load at start ${run.machine.loadAvgAtStart.join(' ')}`,
    '',
    `Real parts throughout (not a simulation): the rig's etcd, ${st.engines} Docker engines each with its node broker, 2 gateways, and a registry on loopback that every engine pulls from. ` +
      `${st.episodes} episodes from ${st.clients} clients (acquire by image, 4 commands of which one writes in /repo, release), images drawn Zipf-like with s = ${st.zipf} (seed ${st.seed}); ` +
      `image pools of ${st.sessionsPerContainer} sessions per container, a disk budget of ${st.diskMb} MB per node. Setup (task set, rig) took ${(run.setupMs / 1000).toFixed(0)} s.`,
    '',
    '## Figures',
    '',
    '| figure | value |',
    '|---|---|',
    `| images used / episodes served / errors | ${byImage.size} / ${ok.length} / ${errors(run.rollout)} |`,
    `| first acquire of an image, p50 / p99 (ms) | ${latencies(firsts)} |`,
    `| acquires that waited for a pull (and a container), p50 / p99 (ms) | ${latencies(ok.filter((s) => s.cost === 'pulled'))} |`,
    `| acquires that waited for a container (image held), p50 / p99 (ms) | ${latencies(ok.filter((s) => s.cost === 'started'))} |`,
    `| warm acquire by image, p50 / p99 (ms) | ${latencies(warm)} |`,
    `| placement, every acquire | ${shares(ok)} |`,
    `| placement, after each image's first acquire answered | ${shares(afterFirstRound)} |`,
    `| what an acquire cost, after each image's first acquire answered | ${costs(afterFirstRound)} |`,
    `| nodes that pulled an image (images by count) | ${histogram(pullsPerImage)} |`,
    `| nodes that served an image (images by count) | ${histogram(nodesPerImage)} |`,
    `| episodes/s: the rollout | ${rollRate.toFixed(2)} (${(run.rollout.wallMs / 1000).toFixed(0)} s) |`,
    `| episodes/s: one image, warm everywhere (the ideal), errors | ${idealRate.toFixed(2)} (${run.ideal.samples.length} episodes), ${errors(run.ideal)} |`,
    `| episodes/s: a dedicated container per episode (today's lifecycle way), errors | ${containerRate.toFixed(2)} (${run.container.samples.length} episodes), ${errors(run.container)} |`,
    '',
    '| node | peak disk (MB) | budget (MB) | evictions | most pulls at once |',
    '|---|---|---|---|---|',
    ...diskRows.map((r) => `| ${r.node} | ${(r.peak / 2 ** 20).toFixed(0)} | ${(r.budget / 2 ** 20).toFixed(0)} | ${r.evictions} | ${r.pullsPeak} |`),
    '',
    '## Goals (from this run)',
    '',
    '| goal | figure | |',
    '|---|---|---|',
    `| warm acquire by image p50 at most 20 ms | ${ms(warmP50)} ms | ${goal(warmP50 <= 20)} |`,
    `| at least 90% placed warm after each image's first round | ${(warmShareAfter * 100).toFixed(1)}% | ${goal(warmShareAfter >= 0.9)} |`,
    `| episodes/s at least 0.8x the one-image ideal | ${(rollRate / idealRate).toFixed(2)}x | ${goal(rollRate >= 0.8 * idealRate)} |`,
    `| episodes/s at least 10x the container-per-episode run | ${(rollRate / containerRate).toFixed(1)}x | ${goal(rollRate >= 10 * containerRate)} |`,
    `| disk never above its budget (sampled every second) | ${overBudget ? 'above' : 'never above'} | ${goal(!overBudget)} |`,
    '',
    'A placement `held` on a node whose pool of the image is full (or whose record is a beat old) is mostly served warm there: the node frees or grows its pool; the cost row says so. ' +
      'Placement is the gateway\'s (`X-Broker-Placement` on each answer); what each acquire cost is the node\'s `image_cost` (warm, started, pulled). ' +
      'The disk, evictions and pulls in flight are each node\'s record as a gateway\'s /health shows it, read every second.',
    '',
  ];
  return lines.join('\n');
}
