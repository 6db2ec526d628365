/**
 * The figures of the shared PTY workspaces, on both backends in one run (local, then docker
 * when the engine and the image are there): /api/execute of `true` beside the pool API's execute of
 * `true` on the same broker, the keystroke echo over /ws/workspace/terminal, a flood's throughput with
 * 1 and with 50 viewers, and the memory an idle workspace costs.
 */
import { request } from 'undici';
import { WORKSPACE_DEPLOYMENT, type SeqResult, type WsFloodRound } from '../protocol';
import { roundText, WS_VIEWERS, type WorkspaceFigures, type WsFlood } from '../lib/workspaceResults';
import { fmtLatency, type BenchContext } from '../lib/context';
import type { BrokerProcess } from '../lib/brokerProcess';
import { sleep } from '../lib/stats';
import { errors, mb } from './single';
import { processesTagged, residentBytes } from '../lib/procMemory';

/** Named workspaces made for the memory figure. */
const IDLE_WORKSPACES = 8;
const SLACK_MS = 90_000;

/** Floods per viewer kind: a terminal full of 80-column lines, and the same as events. */
function floods(quick: boolean): { viewerKind: 'terminal' | 'events'; command: string; floodBytes: number }[] {
  const bytes = quick ? 4_000_000 : 8_000_000;
  // 79 characters and a newline per line: a busy build log, not `yes`'s two-byte lines.
  const command = `yes '${'x'.repeat(79)}' | head -c ${bytes}`;
  return [
    { viewerKind: 'terminal', command, floodBytes: bytes },
    { viewerKind: 'events', command, floodBytes: bytes },
  ];
}

async function post(url: string, path: string, body: unknown, method: 'POST' | 'DELETE' = 'POST'): Promise<{ status: number; json: unknown }> {
  const res = await request(`${url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: method === 'POST' ? JSON.stringify(body) : undefined });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? (JSON.parse(text) as unknown) : null };
}

/** RSS of the broker and of the workspaces' processes before and after IDLE_WORKSPACES named ones start. */
async function idleMemory(broker: BrokerProcess): Promise<WorkspaceFigures['memory']> {
  await sleep(1500);
  const beforeRss = broker.procMemory().rssBytes;
  const beforeProcs = new Set(processesTagged(/-t\d+$/).map((p) => p.pid));
  const ids: string[] = [];
  for (let i = 0; i < IDLE_WORKSPACES; i++) {
    const r = await post(broker.url, '/workspaces', {});
    if (r.status !== 201) throw new Error(`POST /workspaces: ${r.status} ${JSON.stringify(r.json)}`);
    ids.push((r.json as { workspace_id: string }).workspace_id);
  }
  await sleep(1500);
  const afterRss = broker.procMemory().rssBytes;
  const fresh = processesTagged(/-t\d+$/).filter((p) => !beforeProcs.has(p.pid));
  const mem = fresh.map((p) => residentBytes(p.pid));
  for (const id of ids) await post(broker.url, `/workspaces/${id}`, null, 'DELETE');
  const sum = (k: 'pss' | 'rss'): number => mem.reduce((a, m) => a + m[k], 0);
  return {
    workspaces: IDLE_WORKSPACES,
    brokerRssBeforeBytes: beforeRss,
    brokerRssAfterBytes: afterRss,
    brokerPerWorkspaceBytes: (afterRss - beforeRss) / IDLE_WORKSPACES,
    terminalPssPerWorkspaceBytes: sum('pss') / IDLE_WORKSPACES,
    terminalRssPerWorkspaceBytes: sum('rss') / IDLE_WORKSPACES,
    terminalProcesses: fresh.length,
  };
}

async function measure(ctx: BenchContext, backend: 'local' | 'docker'): Promise<void> {
  const quick = ctx.plan.quick;
  const pool = 2 + IDLE_WORKSPACES;
  ctx.mark(`workspace, ${backend} backend: broker 1 x ${pool}`);
  const spec = { name: `workspace-1x${pool}`, backend, containers: 1, perContainer: pool, env: { BROKER_DEPLOYMENT: WORKSPACE_DEPLOYMENT } };
  await ctx.withBroker(spec, async (broker) => {
    const n = quick ? 300 : 1500;
    const execJob = { kind: 'wsExecCompare', url: broker.url, backend, n, warmup: quick ? 200 : 500, maxMs: 120_000 } as const;
    const [workspace, poolExec, ptyFloor] = await ctx.job<SeqResult[]>(execJob, 120_000 + SLACK_MS);
    ctx.log(`/api/execute true: ${fmtLatency(workspace.latency)}${errors(workspace.errors)}`);
    ctx.log(`pool execute true: ${fmtLatency(poolExec.latency)}${errors(poolExec.errors)}`);
    ctx.log(`PTY floor, \`true\` typed into a bare bash: ${fmtLatency(ptyFloor.latency)}${errors(ptyFloor.errors)}`);
    const echo = await ctx.job<SeqResult>({ kind: 'wsEcho', url: broker.url, n: quick ? 300 : 2000, warmup: 100, maxMs: 60_000 }, 60_000 + SLACK_MS);
    ctx.log(`keystroke echo: ${fmtLatency(echo.latency)}${errors(echo.errors)}`);
    const done: WsFlood[] = [];
    const counts = quick ? [1, WS_VIEWERS] : Array.from({ length: 10 }, (_, i) => (i % 2 ? WS_VIEWERS : 1));
    for (const f of floods(quick)) {
      const job = { kind: 'wsFlood', url: broker.url, command: f.command, floodBytes: f.floodBytes, viewerKind: f.viewerKind, counts, timeoutS: 120 } as const;
      const rounds = await ctx.withCpu(`workspace flood, ${f.viewerKind} viewers (${backend})`, () => ctx.job<WsFloodRound[]>(job, counts.length * 150_000));
      done.push({ ...f, rounds });
      ctx.log(`flood of ${f.floodBytes / 1e6} MB, ${f.viewerKind} viewers: ${rounds.map(roundText).join('; ')}`);
    }
    const memory = await idleMemory(broker);
    ctx.log(`idle workspace: broker +${mb(memory.brokerPerWorkspaceBytes)}, its processes ${mb(memory.terminalPssPerWorkspaceBytes)} PSS each (${memory.terminalProcesses} processes)`);
    ctx.results.workspace = { ...ctx.results.workspace, [backend]: { execute: { workspace, pool: poolExec, ptyFloor }, echo, floods: done, memory } };
  });
}

/** Both backends; docker only where the engine answers and has the image (else a note says so). */
export async function workspacePhase(ctx: BenchContext, dockerReady: () => Promise<string | null>): Promise<void> {
  await measure(ctx, 'local');
  const why = await dockerReady();
  if (why) {
    ctx.results.notes.push(`workspace figures on docker not measured: ${why}`);
    ctx.log(`!! workspace, docker backend skipped: ${why}`);
    return;
  }
  await measure(ctx, 'docker');
}
