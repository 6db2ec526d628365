/**
 * Task sandboxes on the Docker backend, against floors measured in the same run:
 *   - POST /sandboxes to init_complete, split into container start, daemon ready, the hand-over
 *     (credentials and /init), the clone and the agent's start; floor: Docker's own create + start of
 *     the same image with no daemon (dockerode);
 *   - event latency, daemon to SSE client (the event's daemon timestamp to its arrival at a client of
 *     the coding stream); floor: a reader of the daemon's own event stream on its socket, reading the
 *     same events at the same time.
 * Run: node -r ts-node/register/transpile-only bench/tasks.ts [--sandboxes 5] [--chunks 400] [--out DIR]
 * Needs an engine and bash-broker-task:latest. Writes <out>/tasks-latest.md and .json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Dockerode from 'dockerode';
import { loadConfig } from '../src/config/config';
import { Broker } from '../src/broker';
import { configureLogger } from '../src/common/logger';
import { UnixDaemonLink } from '../src/backends/docker/tasks/taskDaemonLink';
import { StubLlm } from '../devtools/stubLlm';
import { makeBareRepo, SseReader } from '../devtools/taskStreams';
import { median, summarize } from './lib/stats';

const { values } = parseArgs({ options: { sandboxes: { type: 'string', default: '5' }, chunks: { type: 'string', default: '400' }, out: { type: 'string', default: path.join(__dirname, 'results') } } });
const SANDBOXES = Number(values.sandboxes);
const CHUNKS = Number(values.chunks);
const IMAGE = 'bash-broker-task:latest';
const now = (): number => performance.timeOrigin + performance.now();

async function dockerFloorMs(docker: Dockerode): Promise<number> {
  const t0 = performance.now();
  const c = await docker.createContainer({ Image: IMAGE, Cmd: ['sleep', 'infinity'], HostConfig: { NetworkMode: 'none', Init: true }, Labels: { 'io.bash-broker.bench': 'tasks' } });
  await c.start();
  const ms = performance.now() - t0;
  await c.remove({ force: true });
  return ms;
}

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-tasks-'));
  const stub = new StubLlm();
  await stub.start();
  const pieces = Array.from({ length: CHUNKS }, (_, i) => `word${i} `);
  stub.reply = () => ({ text: pieces, chunkDelayMs: 5 });
  makeBareRepo(path.join(root, 'git'), 'bench/repo', { 'README.md': 'bench\n', ...Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`src/f${i}.txt`, `file ${i}\n`.repeat(50)])) });
  const socketDir = path.join(root, 'sockets');
  const config = loadConfig({
    BROKER_BACKEND: 'docker', PORT: '0', BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_IMAGE: 'bash-broker-test:latest', BROKER_NETWORK_MODE: 'none',
    BROKER_DEPLOYMENT: `bench-tasks-${process.pid}`, BROKER_LOG_LEVEL: 'warn', BROKER_GIT_BASE_URL: path.join(root, 'git'), BROKER_ANTHROPIC_BASE_URL: stub.url,
    BROKER_TASK_SOCKET_DIR: socketDir, ANTHROPIC_API_KEY: 'sk-ant-bench',
  });
  configureLogger(config.logLevel);
  const broker = new Broker(config);
  const { port } = await broker.start();
  await broker.warm();
  const url = `http://127.0.0.1:${port}`;
  const docker = new Dockerode();
  const split: Record<string, number[]> = { total: [], container_start: [], daemon_ready: [], handover: [], clone: [], agent_start: [], floor_create_start: [] };
  const sse: number[] = [];
  const direct: number[] = [];
  try {
    for (let i = 0; i < SANDBOXES; i++) {
      split.floor_create_start.push(await dockerFloorMs(docker));
      const t0 = now();
      const res = await fetch(`${url}/sandboxes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ repo: 'bench/repo', prompt: 'stream' }) });
      const tReturned = now();
      const record = (await res.json()) as { id: string; timings: { container_start_ms: number; daemon_ready_ms: number } };
      if (res.status !== 201) throw new Error(`POST /sandboxes: ${res.status} ${JSON.stringify(record)}`);
      const control = await SseReader.open(`${url}/sandboxes/${record.id}/stream/control`);
      const coding = await SseReader.open(`${url}/sandboxes/${record.id}/stream/coding`);
      const floor = new AbortController();
      const floorRead = (async () => {
        for await (const e of new UnixDaemonLink(path.join(socketDir, record.id, 'daemon.sock')).events(0, floor.signal)) {
          if (e.event.type === 'message_update') direct.push(now() - e.event.timestamp);
        }
      })().catch(() => undefined);
      const ts = async (type: string): Promise<number> => (await control.untilType(type)).event.timestamp;
      const [ready, cloned, init] = [await ts('sandbox_ready'), await ts('repo_cloned'), await ts('init_complete')];
      split.total.push(init - t0);
      split.container_start.push(record.timings.container_start_ms);
      split.daemon_ready.push(record.timings.daemon_ready_ms);
      split.handover.push(tReturned - t0 - record.timings.container_start_ms - record.timings.daemon_ready_ms);
      split.clone.push(cloned - ready);
      split.agent_start.push(init - cloned);
      await coding.until((es) => es.some((e) => e.event.type === 'turn_end'), 'the streamed answer', 120_000);
      for (const r of coding.received) if (r.envelope.event.type === 'message_update') sse.push(r.atMs - r.envelope.event.timestamp);
      floor.abort();
      await floorRead;
      await control.close();
      await coding.close();
      await fetch(`${url}/sandboxes/${record.id}`, { method: 'DELETE' });
    }
  } finally {
    await broker.close();
    await stub.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
  report(split, sse, direct);
}

function report(split: Record<string, number[]>, sse: number[], direct: number[]): void {
  const med = Object.fromEntries(Object.entries(split).map(([k, v]) => [k, median(v)]));
  const s = summarize([...sse]);
  const d = summarize([...direct]);
  const f = (n: number): string => n.toFixed(1);
  const md = [
    `# Task sandboxes: creation and event latency`,
    '',
    `${SANDBOXES} sandboxes, one after another, on ${os.cpus().length} CPUs (${os.hostname()}); ${CHUNKS} streamed deltas each, 5 ms apart. Medians in ms.`,
    '',
    '| POST /sandboxes to init_complete | ms |',
    '|---|---:|',
    `| total | ${f(med.total)} |`,
    `| container create + start | ${f(med.container_start)} |`,
    `| daemon ready (node and Pi's modules loaded, /health answers) | ${f(med.daemon_ready)} |`,
    `| hand-over (credentials, /init) | ${f(med.handover)} |`,
    `| clone (sandbox_ready to repo_cloned) | ${f(med.clone)} |`,
    `| agent start (repo_cloned to init_complete) | ${f(med.agent_start)} |`,
    `| floor: Docker create + start of the image, no daemon | ${f(med.floor_create_start)} |`,
    `| container start / floor | ${(med.container_start / med.floor_create_start).toFixed(2)} |`,
    '',
    '| event latency, daemon to client (message_update) | n | p50 | p90 | p99 |',
    '|---|---:|---:|---:|---:|',
    `| SSE client of /stream/coding | ${s.n} | ${f(s.p50)} | ${f(s.p90)} | ${f(s.p99)} |`,
    `| floor: reader of the daemon's own stream (its socket) | ${d.n} | ${f(d.p50)} | ${f(d.p90)} | ${f(d.p99)} |`,
    `| SSE p50 / floor p50 | | ${(s.p50 / d.p50).toFixed(2)} | | |`,
    '',
    'Daemon timestamps are Date.now() (1 ms resolution): latencies are within about half a millisecond.',
    '',
  ].join('\n');
  fs.mkdirSync(values.out!, { recursive: true });
  fs.writeFileSync(path.join(values.out!, 'tasks-latest.md'), md);
  fs.writeFileSync(path.join(values.out!, 'tasks-latest.json'), JSON.stringify({ split, median: med, sse: s, direct: d }, null, 2));
  console.log(md);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
