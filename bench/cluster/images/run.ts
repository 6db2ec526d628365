/**
 * `npm run bench:cluster-images [-- --images N --episodes N --clients N --zipf S --engines N
 *   --ideal-episodes N --container-episodes N --disk-mb N --registry 127.0.0.1:PORT --seed N]`:
 * a rollout over many task images on the cluster rig (devtools/clusterRig.ts: a private etcd, N
 * Docker engines each with its node broker, 2 gateways, a registry on loopback). It makes the task
 * set (scripts/task-images.ts's images: the sandbox image plus a repository layer of 1-5 MB, pushed
 * to the registry; skipped when there), starts the rig with on-demand images on, and through the
 * gateways runs, one after the other:
 *
 * 1. the rollout: `episodes` episodes (episodes.ts: acquire by image, 4 commands of which one writes
 *    in the repository, release) from `clients` clients, images drawn Zipf-like (s = `zipf`);
 * 2. the one-image ideal: `ideal-episodes` of the same shape on the most popular image, warm on
 *    every node first;
 * 3. today's way: `container-episodes` in a dedicated container each (a lifecycle create with
 *    resourceLimits, the commands through execd, its delete), images drawn the same way.
 *
 * The gateways' /health is read every second meanwhile (each node's disk against its budget,
 * evictions, pulls in flight). Writes bench/results/cluster-images-latest.{md,json} (report.ts).
 * Defaults are the issue's scale (200 images, 5,000 episodes, 64 clients, s = 1.1, 3 engines).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ClusterRig } from '../../../devtools/clusterRig';
import { registryHas, TestRegistry, type RegistryRef } from '../../../devtools/registry';
import { pushTaskImage } from '../../../devtools/taskImage';
import { REPO_DIR } from '../../lib/brokerProcess';
import { ensureBuilt } from '../../lib/build';
import { describeMachine } from '../../lib/machine';
import { nowMs, sleep } from '../../lib/stats';
import { runBounded, writeResults } from '../results';
import { closedLoop, episodeByImage, episodeInContainer, GatewayClient, zipfSampler, type EpisodeSample } from './episodes';
import { renderImagesReport, type DiskSample, type ImagesRun } from './report';

const { values: args } = parseArgs({
  options: {
    images: { type: 'string', default: '200' },
    episodes: { type: 'string', default: '5000' },
    clients: { type: 'string', default: '64' },
    zipf: { type: 'string', default: '1.1' },
    engines: { type: 'string', default: '3' },
    'ideal-episodes': { type: 'string', default: '1000' },
    'container-episodes': { type: 'string', default: '200' },
    'disk-mb': { type: 'string', default: '2048' },
    'sessions-per-container': { type: 'string', default: '8' },
    registry: { type: 'string' },
    seed: { type: 'string', default: '1' },
    out: { type: 'string', default: path.join(REPO_DIR, 'bench', 'results') },
  },
});
const num = (name: keyof typeof args): number => {
  const n = Number(args[name]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${args[name]}`);
  return n;
};
const BASE = 'bash-broker-sandbox:latest';
const ACQUIRE_TIMEOUT_S = 600;

async function taskSet(registry: RegistryRef, count: number): Promise<string[]> {
  const refs: string[] = [];
  for (let i = 0; i < count; i++) {
    const repository = `tasks/task-${String(i).padStart(4, '0')}`;
    refs.push(`${registry.address}/${repository}:v1`);
    if (await registryHas(registry, repository, 'v1')) continue;
    // 1 to 5 MB by i, as scripts/task-images.ts makes them.
    const bytes = Math.round((1 + ((i * 7919) % 1000) / 250) * 1024 * 1024);
    await pushTaskImage(registry, repository, 'v1', { base: BASE, bytes, keepLocal: false });
    console.log(`task image ${i + 1}/${count} pushed`);
  }
  return refs;
}

/** Every second: each node's disk, budget, evictions and pulls in flight, as a gateway's /health tells. */
function sampleDisk(client: GatewayClient, into: DiskSample[], startMs: number): () => void {
  let stopped = false;
  void (async () => {
    while (!stopped) {
      const h = await client.call('GET', '/health').catch(() => null);
      for (const n of (h?.json?.nodes ?? []) as Array<{ node_id: string; images?: { disk_used_bytes: number; disk_budget_bytes: number; evictions: number; pulls_in_flight: number } }>) {
        if (n.images) into.push({ atMs: nowMs() - startMs, node: n.node_id, used: n.images.disk_used_bytes, budget: n.images.disk_budget_bytes, evictions: n.images.evictions, pulls: n.images.pulls_in_flight });
      }
      await sleep(1000);
    }
  })();
  return () => void (stopped = true);
}

runBounded('bench:cluster-images', 6 * 3600_000, async (onStop) => {
  const startedAt = new Date();
  ensureBuilt(REPO_DIR);
  const entry = path.join(REPO_DIR, 'dist', 'index.js');
  const ownRegistry = args.registry ? null : await TestRegistry.start();
  const registry: RegistryRef = ownRegistry ?? { address: args.registry!, auth: null, dockerConfig: null };
  let rig: ClusterRig | null = null;
  onStop(async () => {
    await rig?.down().catch(() => undefined);
    await ownRegistry?.destroy();
  });
  const setupStart = nowMs();
  const images = await taskSet(registry, num('images'));
  const perContainer = num('sessions-per-container');
  rig = await ClusterRig.up({
    dir: fs.mkdtempSync(path.join(os.tmpdir(), 'bench-images-rig-')),
    engines: num('engines'),
    gateways: 2,
    images: [BASE],
    entry,
    registry: registry.address,
    ownerPid: process.pid,
    nodeEnv: {
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '2',
      BROKER_IMAGE_ALLOW: `${registry.address}/tasks/*`,
      BROKER_IMAGE_SESSIONS_PER_CONTAINER: String(perContainer),
      BROKER_IMAGE_DISK: `${num('disk-mb')}m`,
      BROKER_ACQUIRE_TIMEOUT: String(ACQUIRE_TIMEOUT_S),
    },
  });
  const setupMs = nowMs() - setupStart;
  const clients = rig.gatewayUrls.map((url) => new GatewayClient(url, rig!.clientToken));
  const via = (i: number): GatewayClient => clients[i % clients.length];
  const draw = (): (() => number) => zipfSampler(images.length, num('zipf'), num('seed'));

  const disk: DiskSample[] = [];
  const phaseStart = nowMs();
  const stopDisk = sampleDisk(clients[0], disk, phaseStart);
  const rank = draw();
  const order = Array.from({ length: num('episodes') }, () => images[rank()]);
  console.log(`rollout: ${order.length} episodes over ${new Set(order).size} images from ${num('clients')} clients`);
  const rollout = await closedLoop(order.length, num('clients'), (i) => episodeByImage(via(i), order[i], phaseStart, ACQUIRE_TIMEOUT_S));
  stopDisk();

  // The ideal: the most popular image, warm on every node (a burst of acquires first, not measured).
  const top = images[0];
  await closedLoop(num('clients'), num('clients'), (i) => episodeByImage(via(i), top, nowMs(), ACQUIRE_TIMEOUT_S));
  console.log(`ideal: ${num('ideal-episodes')} episodes of ${top}`);
  const idealStart = nowMs();
  const ideal = await closedLoop(num('ideal-episodes'), num('clients'), (i) => episodeByImage(via(i), top, idealStart, ACQUIRE_TIMEOUT_S));

  const containerRank = draw();
  const containerOrder = Array.from({ length: num('container-episodes') }, () => images[containerRank()]);
  console.log(`container per episode: ${containerOrder.length} episodes`);
  const containerStart = nowMs();
  const container = await closedLoop(containerOrder.length, num('clients'), (i) => episodeInContainer(via(i), containerOrder[i], containerStart));

  const run: ImagesRun = {
    command: `npm run bench:cluster-images -- ${process.argv.slice(2).join(' ')}`.trim(),
    startedAt: startedAt.toISOString(),
    machine: await describeMachine(REPO_DIR),
    settings: { images: images.length, episodes: order.length, clients: num('clients'), zipf: num('zipf'), engines: num('engines'), diskMb: num('disk-mb'), sessionsPerContainer: perContainer, seed: num('seed') },
    setupMs,
    rollout: { ...rollout, samples: rollout.samples as EpisodeSample[] },
    ideal,
    container,
    disk,
  };
  const name = 'cluster-images-latest';
  writeResults(args.out!, name, run, renderImagesReport(run));
});
