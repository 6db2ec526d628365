/**
 * Branching an episode (docs/snapshots.md), against replaying its prefix, in one run on isolated
 * docker sessions:
 *
 * - snapshot: POST /session/{id}/snapshot of a session whose prefix wrote S MB (outside its
 *   working directory, so into its layer) and set variables and a function: p50 and p99, and the
 *   bytes its layer holds;
 * - fork of N: POST /session/{id}/fork {"n": N} to all N sessions ready (answered), against the
 *   replay: acquire_group N, then the prefix run again in each (what a client without snapshots
 *   does, and only right when the prefix is deterministic);
 * - bytes copied per fork: a fork copies the snapshot's working directory (here empty) and none of
 *   its layer or of the image (the layer is a lower layer of the fork's overlay).
 *
 * node -r ts-node/register/transpile-only bench/snapshots.ts [--sizes 1,10] [--forks 1,8]
 *   [--rounds 20] [--containers 3] [--per-container 4] [--container-memory 1g] [--append]
 *   [--out bench/results]
 * `--append` adds this run's table to snapshots-latest.md rather than replacing it (a fork of 64
 * needs a bigger pool than the sizes' run, and a replay of 64 x 100 MB more memory than the machine).
 * The broker runs as built (dist/, rebuilt when older than src/), in its own process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrokerProcess, REPO_DIR } from './lib/brokerProcess';
import { ensureBuilt } from './lib/build';
import { nowMs, summarize } from './lib/stats';
import type { LatencySummary } from './protocol';

interface Options {
  sizesMb: number[];
  forks: number[];
  rounds: number;
  containers: number;
  perContainer: number;
  /** BROKER_CONTAINER_MEMORY: a session's layer is a tmpfs charged to its container. */
  containerMemory: string;
  append: boolean;
  out: string;
}

function parseArgs(argv: string[]): Options {
  const get = (name: string, dflt: string): string => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && argv[i + 1] ? argv[i + 1] : dflt;
  };
  const list = (text: string): number[] => text.split(',').map(Number);
  return {
    sizesMb: list(get('sizes', '1,10')),
    forks: list(get('forks', '1,8')),
    rounds: Number(get('rounds', '20')),
    containers: Number(get('containers', '3')),
    perContainer: Number(get('per-container', '4')),
    containerMemory: get('container-memory', '1g'),
    append: argv.includes('--append'),
    out: get('out', path.join(REPO_DIR, 'bench', 'results')),
  };
}

async function call(url: string, method: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function ok(url: string, method: string, body?: unknown): Promise<Record<string, unknown>> {
  const r = await call(url, method, body);
  if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

/** The episode's prefix: S MB written outside the working directory, and shell state. */
function prefix(sizeMb: number): string[] {
  return [`head -c ${sizeMb * 1024 * 1024} /dev/urandom >/root/data.bin`, 'cd /etc; export STEP=3; declare -a seen=(a b c); pick() { echo "$1"; }'];
}

/** Until every session but the parent's is free again: each measurement starts from a warm pool, not from a cleanup. */
async function settled(base: string, total: number): Promise<void> {
  for (;;) {
    const h = await ok(`${base}/health`, 'GET');
    if ((h.available_sessions as number) >= total - 1) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function exec(base: string, id: string, command: string): Promise<void> {
  const r = await ok(`${base}/session/${id}/execute`, 'POST', { command, timeout: 120 });
  if (r.return_code !== 0) throw new Error(`${command}: ${JSON.stringify(r)}`);
}

interface SizeResult {
  sizeMb: number;
  snapshot: LatencySummary;
  layerBytes: number;
  forks: { n: number; fork: LatencySummary; replay: LatencySummary; bytesCopiedPerFork: number }[];
}

async function measureSize(base: string, o: Options, sizeMb: number, total: number): Promise<SizeResult> {
  const parent = (await ok(`${base}/session/acquire`, 'POST', {})).session_id as string;
  for (const command of prefix(sizeMb)) await exec(base, parent, command);
  const snapshotMs: number[] = [];
  let layerBytes = 0;
  for (let round = 0; round < o.rounds; round++) {
    const t0 = nowMs();
    const snap = await ok(`${base}/session/${parent}/snapshot`, 'POST', {});
    snapshotMs.push(nowMs() - t0);
    layerBytes = snap.bytes as number;
    await ok(`${base}/snapshots/${snap.snapshot_id as string}`, 'DELETE');
  }
  const forks: SizeResult['forks'] = [];
  for (const n of o.forks) {
    const forkMs: number[] = [];
    const replayMs: number[] = [];
    for (let round = 0; round < o.rounds; round++) {
      await settled(base, total);
      let t0 = nowMs();
      const forked = await ok(`${base}/session/${parent}/fork`, 'POST', { n });
      forkMs.push(nowMs() - t0);
      const ids = (forked.sessions as { session_id: string }[]).map((s) => s.session_id);
      for (const id of ids) await ok(`${base}/session/${id}/release`, 'POST');
      const snapshotId = (forked.snapshot as { snapshot_id: string }).snapshot_id;
      // The forks' slots are cleaned in the background: the delete waits for none of them.
      while ((await call(`${base}/snapshots/${snapshotId}`, 'DELETE')).status === 409) await new Promise((r) => setTimeout(r, 20));
      await settled(base, total);
      t0 = nowMs();
      const group = await ok(`${base}/session/acquire_group`, 'POST', { n });
      const replayIds = (group.sessions as { session_id: string }[]).map((s) => s.session_id);
      await Promise.all(replayIds.map(async (id) => { for (const command of prefix(sizeMb)) await exec(base, id, command); }));
      replayMs.push(nowMs() - t0);
      for (const id of replayIds) await ok(`${base}/session/${id}/release`, 'POST');
    }
    // The working directory is the one copy a fork makes; the prefix wrote nothing there.
    forks.push({ n, fork: summarize(forkMs), replay: summarize(replayMs), bytesCopiedPerFork: 0 });
  }
  await ok(`${base}/session/${parent}/release`, 'POST');
  return { sizeMb, snapshot: summarize(snapshotMs), layerBytes, forks };
}

const ms = (v: number): string => v.toFixed(1);

function report(o: Options, results: SizeResult[], loadAtStart: number): string {
  const pool = `--containers ${o.containers} --per-container ${o.perContainer} --container-memory ${o.containerMemory}`;
  const lines = [
    ...(o.append ? ['## A bigger pool', ''] : ['# Snapshots and forks against replaying the prefix', '']),
    `Command: \`node -r ts-node/register/transpile-only bench/snapshots.ts --sizes ${o.sizesMb.join(',')} --forks ${o.forks.join(',')} --rounds ${o.rounds} ${pool}${o.append ? ' --append' : ''}\``,
    '',
    `${new Date().toISOString()}; ${os.cpus().length} CPUs, ${os.cpus()[0]?.model ?? ''}; load ${loadAtStart.toFixed(2)} at the start, ${os.loadavg()[0].toFixed(2)} at the end (the machine is shared). Docker backend, per-lease isolation, image bash-broker-test, ${o.containers} containers x ${o.perContainer} sessions.`,
    '',
    '| prefix wrote | snapshot p50 | snapshot p99 | layer bytes | N | fork p50 | fork p99 | replay p50 | replay p99 | bytes copied per fork |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    for (const f of r.forks) lines.push(`| ${r.sizeMb} MB | ${ms(r.snapshot.p50)} ms | ${ms(r.snapshot.p99)} ms | ${r.layerBytes} | ${f.n} | ${ms(f.fork.p50)} ms | ${ms(f.fork.p99)} ms | ${ms(f.replay.p50)} ms | ${ms(f.replay.p99)} ms | ${f.bytesCopiedPerFork} |`);
  }
  lines.push(
    '',
    "A fork's time includes its snapshot (fork = snapshot + N sessions started from it); the replay's is acquire_group N and the prefix run in each. Bytes copied per fork: the snapshot's working directory (empty here); the layer and the image are never copied per fork (the layer is the fork's overlay's lower layer). The snapshot copies the layer once: `layer bytes`.",
    '',
  );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  ensureBuilt(REPO_DIR);
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-snapshots-'));
  const loadAtStart = os.loadavg()[0];
  const broker = await BrokerProcess.start(
    {
      name: 'snapshots',
      backend: 'docker',
      containers: o.containers,
      perContainer: o.perContainer,
      image: 'bash-broker-test:latest',
      env: { BROKER_CONTAINER_MEMORY: o.containerMemory, BROKER_SNAPSHOT_BUDGET: '4g', BROKER_NETWORK_MODE: 'none', BROKER_DEPLOYMENT: `bench-snap-${process.pid}`, BROKER_ACQUIRE_TIMEOUT: '60' },
    },
    logDir,
  );
  try {
    await broker.waitWarm(300_000);
    const results: SizeResult[] = [];
    for (const sizeMb of o.sizesMb) results.push(await measureSize(broker.url, o, sizeMb, broker.total));
    const text = report(o, results, loadAtStart);
    fs.mkdirSync(o.out, { recursive: true });
    const file = path.join(o.out, 'snapshots-latest.md');
    if (o.append) fs.appendFileSync(file, '\n' + text);
    else fs.writeFileSync(file, text);
    process.stdout.write(text);
  } finally {
    await broker.stop(60_000);
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
