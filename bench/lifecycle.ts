/**
 * The lifecycle API with OpenSandbox's own SDK, side by side in one run:
 *
 * - warm: `Sandbox.create` (a POST, the two endpoint GETs the SDK makes, its execd readiness ping)
 *   to the first stdout of `commands.run('echo ready')`, from a warm pool of whole containers; beside
 *   it, round by round, its floor: the pool API's acquire and execute of `true` (a warm slot, one
 *   command in its shell: what any create-and-run pays), so the ratio holds on a noisy machine;
 * - dedicated: the same for an image no pool serves (a container of its own), beside Docker's own
 *   `docker run --rm IMAGE echo ready` (docker backend only);
 * - held: N sandboxes created at once and held together (each answers a command), then killed.
 *
 * node -r ts-node/register/transpile-only bench/lifecycle.ts [--backend local|docker] [--image IMG]
 *   [--other-image IMG] [--rounds 40] [--dedicated-rounds 10] [--held 256] [--out bench/results]
 * The broker runs as built (dist/, rebuilt when older than src/), in its own process.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ConnectionConfig, Sandbox } from '@alibaba-group/opensandbox';
import { BrokerProcess, REPO_DIR } from './lib/brokerProcess';
import { ensureBuilt } from './lib/build';
import { mapLimit, nowMs, sleep, summarize } from './lib/stats';
import type { LatencySummary } from './protocol';

const run = promisify(execFile);

interface Options {
  backend: 'local' | 'docker';
  image: string;
  otherImage: string;
  rounds: number;
  dedicatedRounds: number;
  held: number;
  out: string;
}

function parseArgs(argv: string[]): Options {
  const get = (name: string, dflt: string): string => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && argv[i + 1] ? argv[i + 1] : dflt;
  };
  const backend = get('backend', 'local') as Options['backend'];
  return {
    backend,
    image: get('image', backend === 'docker' ? 'bash-broker-sandbox:latest' : 'warm-image'),
    otherImage: get('other-image', backend === 'docker' ? 'bash-broker-test:latest' : 'other-image'),
    rounds: Number(get('rounds', '40')),
    dedicatedRounds: Number(get('dedicated-rounds', '10')),
    held: Number(get('held', '256')),
    out: get('out', path.join(REPO_DIR, 'bench', 'results')),
  };
}

/** Create to the first byte of a command's stdout, through the SDK; the sandbox is returned, not killed. */
async function createToFirstOutput(config: ConnectionConfig, image: string): Promise<{ sandbox: Sandbox; createMs: number; initMs: number; firstOutputMs: number }> {
  const t0 = nowMs();
  const sandbox = await Sandbox.create({ connectionConfig: config, image });
  const createMs = nowMs() - t0;
  let firstOutputMs = NaN;
  let initMs = NaN;
  await sandbox.commands.run(
    'echo ready',
    {},
    { onInit: () => void (initMs = nowMs() - t0), onStdout: () => void (firstOutputMs = Number.isNaN(firstOutputMs) ? nowMs() - t0 : firstOutputMs) },
  );
  return { sandbox, createMs, initMs, firstOutputMs };
}

/** Each SDK request's time to its response headers, by route kind (the SDK's own fetch, wrapped). */
function timeRequests(config: ConnectionConfig): Map<string, number[]> {
  const byKind = new Map<string, number[]>();
  const kindOf = (method: string, url: string): string => {
    if (url.includes('/endpoints/')) return 'GET endpoint';
    if (url.endsWith('/execd/ping')) return 'GET execd ping';
    if (url.includes('/execd/command')) return 'POST execd command (to headers)';
    if (/\/v1\/sandboxes$/.test(url)) return `${method} /v1/sandboxes`;
    if (/\/v1\/sandboxes\/[^/]+$/.test(url)) return `${method} /v1/sandboxes/{id}`;
    return `${method} other`;
  };
  // The transport is a private field of ConnectionConfig: the SDK offers no hook to time its requests.
  const holder = config as unknown as { _fetch: typeof fetch };
  const inner = holder._fetch;
  holder._fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const t0 = nowMs();
    const res = await inner(input, init);
    const kind = kindOf(method, url.split('?')[0]);
    byKind.set(kind, [...(byKind.get(kind) ?? []), nowMs() - t0]);
    return res;
  };
  return byKind;
}

async function warmAvailable(url: string, pool: string): Promise<number> {
  const res = await fetch(`${url}/health`);
  return ((await res.json()) as { pools?: Record<string, { available_sessions: number }> }).pools?.[pool]?.available_sessions ?? 0;
}

async function waitAvailable(url: string, pool: string, n: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await warmAvailable(url, pool)) < n) {
    if (Date.now() > deadline) throw new Error(`pool ${pool} did not reach ${n} available sessions within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** The pool API's acquire, then execute of `true`, to its answer (the session released after, untimed). */
async function acquireExecuteFloor(url: string): Promise<number> {
  const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const t0 = nowMs();
  const { session_id: id } = (await post('/session/acquire', {})) as { session_id: string };
  const { return_code: code } = (await post(`/session/${id}/execute`, { command: 'true' })) as { return_code: number };
  const ms = nowMs() - t0;
  if (code !== 0) throw new Error(`true returned ${code}`);
  await post(`/session/${id}/release`, {});
  return ms;
}

/** `num / den` of two p50s, to one decimal. */
const ratio = (num: LatencySummary, den: LatencySummary): number => Math.round((num.p50 / den.p50) * 10) / 10;

/** The goal for a warm create to the first command output (p50). */
const WARM_FIRST_OUTPUT_GOAL_MS = 20;

async function dockerRunFloor(image: string, rounds: number): Promise<LatencySummary> {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = nowMs();
    const { stdout } = await run('docker', ['run', '--rm', '--network', 'none', '--name', `bench-lifecycle-floor-${process.pid}-${i}`, image, 'echo', 'ready']);
    if (stdout.trim() !== 'ready') throw new Error(`docker run printed ${JSON.stringify(stdout)}`);
    samples.push(nowMs() - t0);
  }
  return summarize(samples);
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  ensureBuilt(REPO_DIR);
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-lifecycle-'));
  const warmSize = Math.max(o.held, 8);
  const pools = { warm: { image: o.image, containers: warmSize, sessions_per_container: 1 } };
  const broker = await BrokerProcess.start(
    {
      name: 'lifecycle',
      backend: o.backend,
      containers: 1,
      perContainer: 1,
      image: o.image,
      env: {
        BROKER_POOLS: JSON.stringify(pools),
        BROKER_SANDBOX_MAX_DEDICATED: '4',
        BROKER_NETWORK_MODE: 'none',
        // A deployment of its own: a broker sweeps its deployment's containers that it did not start.
        BROKER_DEPLOYMENT: `bench-lifecycle-${process.pid}`,
      },
    },
    logDir,
  );
  const config = new ConnectionConfig({ domain: broker.url, disableMetrics: true }).withTransportIfMissing();
  // The machine is shared: its load (1-minute average) at the start and the end says how noisy the run was.
  const results: Record<string, unknown> = { backend: o.backend, image: o.image, otherImage: o.otherImage, cpus: os.cpus().length, date: new Date().toISOString(), loadAtStart: os.loadavg()[0] };
  try {
    const warmupMs = await broker.waitWarm(600_000);
    await waitAvailable(broker.url, 'warm', warmSize, 1_200_000);
    results.warmPoolReadyMs = nowMs() - broker.spawnedAtMs;
    results.defaultPoolWarmMs = warmupMs;

    // Warm: one at a time, each from a full pool (the fresh container of the last one is not waited for by the timing).
    const warmCreate: number[] = [];
    const warmFirst: number[] = [];
    // The command's own part: from create's end to its init event (its runner taken) and to its first output.
    const commandInit: number[] = [];
    const commandFirst: number[] = [];
    const floor: number[] = [];
    const requests = timeRequests(config);
    for (let i = 0; i < o.rounds; i++) {
      await waitAvailable(broker.url, 'default', 1, 120_000);
      floor.push(await acquireExecuteFloor(broker.url));
      await waitAvailable(broker.url, 'warm', warmSize, 120_000);
      const r = await createToFirstOutput(config, o.image);
      warmCreate.push(r.createMs);
      warmFirst.push(r.firstOutputMs);
      commandInit.push(r.initMs - r.createMs);
      commandFirst.push(r.firstOutputMs - r.createMs);
      await r.sandbox.kill();
    }
    const perRequest = Object.fromEntries([...requests].map(([kind, samples]) => [kind, summarize(samples)]));
    requests.clear();
    const firstOutput = summarize(warmFirst);
    const floorSummary = summarize(floor);
    results.warm = {
      createToReady: summarize(warmCreate),
      createToFirstOutput: firstOutput,
      perRequest,
      commandToInit: summarize(commandInit),
      commandToFirstOutput: summarize(commandFirst),
      floor: floorSummary,
      goalMs: WARM_FIRST_OUTPUT_GOAL_MS,
      meetsGoal: firstOutput.p50 <= WARM_FIRST_OUTPUT_GOAL_MS,
      ratioToFloor: ratio(firstOutput, floorSummary),
    };
    console.log('warm', JSON.stringify(results.warm));

    // Dedicated, beside docker run (docker backend only; locally a "dedicated" sandbox is a fresh working root).
    const dedicatedFirst: number[] = [];
    const dedicatedCreate: number[] = [];
    for (let i = 0; i < o.dedicatedRounds; i++) {
      const r = await createToFirstOutput(config, o.otherImage);
      dedicatedCreate.push(r.createMs);
      dedicatedFirst.push(r.firstOutputMs);
      await r.sandbox.kill();
    }
    results.dedicated = { createToReady: summarize(dedicatedCreate), createToFirstOutput: summarize(dedicatedFirst) };
    if (o.backend === 'docker') (results.dedicated as Record<string, unknown>).dockerRunFloor = await dockerRunFloor(o.otherImage, o.dedicatedRounds);
    console.log('dedicated', JSON.stringify(results.dedicated));

    // Held: N at once (32 creates in flight), all alive together, then killed.
    await waitAvailable(broker.url, 'warm', warmSize, 1_200_000);
    const t0 = nowMs();
    const held = await mapLimit(Array.from({ length: o.held }, (_, i) => i), 32, () => createToFirstOutput(config, o.image));
    const allUpMs = nowMs() - t0;
    const list = await fetch(`${broker.url}/v1/sandboxes?state=Running&pageSize=1000`).then((r) => r.json() as Promise<{ pagination: { totalItems: number } }>);
    const answers = await mapLimit(held, 32, async ({ sandbox }) => (await sandbox.commands.run('echo still-here')).logs.stdout.map((m) => m.text).join(''));
    await mapLimit(held, 32, ({ sandbox }) => sandbox.kill());
    results.held = {
      sandboxes: o.held,
      allUpMs,
      runningListed: list.pagination.totalItems,
      allAnswered: answers.every((a) => a === 'still-here'),
      createToFirstOutput: summarize(held.map((h) => h.firstOutputMs)),
      rssMb: Math.round(broker.procMemory().rssBytes / 2 ** 20),
    };
    console.log('held', JSON.stringify(results.held));
  } finally {
    await config.closeTransport();
    await broker.stop(60_000);
  }
  results.loadAtEnd = os.loadavg()[0];
  fs.mkdirSync(o.out, { recursive: true });
  const file = path.join(o.out, `lifecycle-${o.backend}-latest.json`);
  fs.writeFileSync(file, JSON.stringify(results, null, 2));
  fs.writeFileSync(file.replace(/\.json$/, '.md'), report(results));
  console.log(`wrote ${file} and its .md`);
}

/** The committed report: the figures in ms (p50 / p90 / max) with the run's conditions. */
function report(r: Record<string, unknown>): string {
  const f = (s: LatencySummary | undefined): string => (s ? `${s.p50.toFixed(1)} / ${s.p90.toFixed(1)} / ${s.max.toFixed(1)} (n=${s.n})` : 'n/a');
  const warm = r.warm as {
    createToReady: LatencySummary;
    createToFirstOutput: LatencySummary;
    perRequest: Record<string, LatencySummary>;
    commandToInit: LatencySummary;
    commandToFirstOutput: LatencySummary;
    floor: LatencySummary;
    meetsGoal: boolean;
    ratioToFloor: number;
  };
  const dedicated = r.dedicated as { createToReady: LatencySummary; createToFirstOutput: LatencySummary; dockerRunFloor?: LatencySummary };
  const held = r.held as { sandboxes: number; allUpMs: number; runningListed: number; allAnswered: boolean; createToFirstOutput: LatencySummary; rssMb: number };
  const lines = [
    `# Lifecycle API through the OpenSandbox SDK: ${r.backend} backend`,
    '',
    `${r.date}; ${r.cpus} CPUs; 1-minute load ${Number(r.loadAtStart).toFixed(1)} at the start, ${Number(r.loadAtEnd).toFixed(1)} at the end (a shared machine).`,
    `Warm pool of ${r.image}; dedicated image ${r.otherImage}. Figures in ms: p50 / p90 / max.`,
    '',
    '| figure | ms |',
    '|---|---|',
    `| warm: Sandbox.create (POST, 2 endpoint GETs, execd ping) | ${f(warm.createToReady)} |`,
    `| warm: Sandbox.create to the first stdout of commands.run | ${f(warm.createToFirstOutput)} |`,
    `| warm: of it, commands.run to its init event (the runner taken) / to its first stdout | ${f(warm.commandToInit)} / ${f(warm.commandToFirstOutput)} |`,
    `| floor, in the same rounds: pool API acquire + execute of \`true\` | ${f(warm.floor)} |`,
    ...Object.entries(warm.perRequest).map(([kind, s]) => `| warm, per SDK request: ${kind} | ${f(s)} |`),
    `| dedicated: Sandbox.create | ${f(dedicated.createToReady)} |`,
    `| dedicated: Sandbox.create to the first stdout | ${f(dedicated.createToFirstOutput)} |`,
    `| docker run --rm IMAGE echo ready (the floor) | ${f(dedicated.dockerRunFloor)} |`,
    `| held: ${held.sandboxes} created at once (32 in flight), create to first stdout | ${f(held.createToFirstOutput)} |`,
    '',
    '| target | goal | measured (p50) | ratio to the floor | verdict |',
    '|---|---|---|---|---|',
    `| SDK Sandbox.create to first command output, warm pool | ${WARM_FIRST_OUTPUT_GOAL_MS} ms or less | ${warm.createToFirstOutput.p50.toFixed(1)} ms | ${warm.ratioToFloor}x (floor ${warm.floor.p50.toFixed(1)} ms) | ${warm.meetsGoal ? 'pass' : 'FAIL'} |`,
    '',
    `Held: all ${held.sandboxes} up in ${(held.allUpMs / 1000).toFixed(1)} s; ${held.runningListed} listed Running; every one answered a command afterwards: ${held.allAnswered}; broker RSS ${held.rssMb} MB.`,
    '',
  ];
  return lines.join('\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
