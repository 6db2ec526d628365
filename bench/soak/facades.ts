/**
 * The facades' episodes in the mixed load, each checked exactly like the pool's:
 *  - sandbox: OpenSandbox's TypeScript SDK, unchanged: create (from the warm pool), a command whose
 *    lines stream to handlers, a file written and read back, kill;
 *  - workspace: a named workspace with a live viewer on its events: a command through /api/execute,
 *    its answer, the viewer seeing the job's exit, then the workspace ended (its slot goes back).
 * An episode that starts while every warm sandbox is taken waits for one (at most `warmSlots` run).
 */
import { Sandbox, type OutputMessage } from '@alibaba-group/opensandbox';
import WebSocket from 'ws';
import type { SoakHttp } from './http';
import type { Random } from './random';
import { Unexpected, type Tally } from './tally';
import { nowMs } from '../lib/stats';

export interface FacadeCtx {
  url: string;
  http: SoakHttp;
  tally: Tally;
  image: string;
}

/** Bounds on a facade episode's waits: far above their latency at the sized load. */
const VIEWER_WAIT_MS = 60_000;

export async function checked<T>(tally: Tally, kind: string, run: () => Promise<T>): Promise<T | null> {
  const t0 = nowMs();
  try {
    const out = await run();
    tally.latency(kind, nowMs() - t0);
    tally.count(`${kind}: as expected`);
    return out;
  } catch (err) {
    if (err instanceof Unexpected) tally.error(err.kind, err.message);
    else tally.error(`${kind}: ${(err as Error).name}`, (err as Error).message ?? String(err));
    return null;
  }
}

export async function sandboxEpisode(c: FacadeCtx, rnd: Random): Promise<void> {
  await checked(c.tally, 'sdk sandbox episode', async () => {
    const connectionConfig = { domain: c.url, disableMetrics: true };
    const sandbox = await Sandbox.create({ connectionConfig, image: c.image, timeoutSeconds: 300 });
    try {
      const t = rnd.token();
      const lines: string[] = [];
      const run = await sandbox.commands.run(`for i in 1 2 3; do echo "s${t} $i"; done`, undefined, { onStdout: (m: OutputMessage) => void lines.push(m.text) });
      if (run.exitCode !== 0 || lines.join('|') !== `s${t} 1|s${t} 2|s${t} 3`) throw new Unexpected('sdk sandbox: wrong streamed output', `exit ${run.exitCode}, lines ${JSON.stringify(lines)}`);
      const file = `/tmp/soak-${t}.txt`;
      await sandbox.files.writeFiles([{ path: file, data: `file ${t}\n` }]);
      const back = await sandbox.files.readFile(file);
      if (back !== `file ${t}\n`) throw new Unexpected('sdk sandbox: wrong file read back', JSON.stringify(back).slice(0, 200));
    } finally {
      await sandbox.kill();
      await sandbox.close();
    }
  });
}

function openViewer(url: string): Promise<{ socket: WebSocket; events: Array<Record<string, unknown>> }> {
  return new Promise((resolve, reject) => {
    const events: Array<Record<string, unknown>> = [];
    const socket = new WebSocket(url);
    socket.on('message', (data: Buffer) => events.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>));
    socket.once('open', () => resolve({ socket, events }));
    socket.once('error', reject);
    socket.once('unexpected-response', (_req, res) => reject(new Unexpected(`workspace viewer: upgrade refused ${res.statusCode}`, '')));
  });
}

export async function workspaceEpisode(c: FacadeCtx, rnd: Random): Promise<void> {
  await checked(c.tally, 'workspace episode', async () => {
    const created = await c.http.post('/workspaces', {});
    const id = created.body?.workspace_id;
    if (created.status !== 201 || typeof id !== 'string') throw new Unexpected(`workspace create: HTTP ${created.status}`, JSON.stringify(created.body).slice(0, 300));
    const viewer = await openViewer(`${c.url.replace(/^http/, 'ws')}/workspaces/${id}/ws/workspace`);
    try {
      const t = rnd.token();
      const a = await c.http.post(`/workspaces/${id}/api/execute`, { command: `echo w${t}` });
      if (a.status !== 200 || a.body?.returncode !== 0 || a.body?.stdout !== `w${t}\n`) throw new Unexpected('workspace execute: wrong answer', `HTTP ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`);
      const job = a.body.job_id;
      const deadline = Date.now() + VIEWER_WAIT_MS;
      while (!viewer.events.some((e) => e.type === 'exit' && e.job_id === job)) {
        if (Date.now() > deadline) throw new Unexpected("workspace viewer: no exit event of the job", JSON.stringify(viewer.events.slice(-5)).slice(0, 300));
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      viewer.socket.close();
      const ended = await c.http.end('DELETE', `/workspaces/${id}`);
      if (ended.status !== 200 || ended.body?.status !== 'ended') c.tally.error(`workspace end: HTTP ${ended.status}`, JSON.stringify(ended.body).slice(0, 300));
    }
  });
}
