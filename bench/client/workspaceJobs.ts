/**
 * The workspace figures, driven from the client process: /api/execute of `true` beside the
 * pool API's execute on the same broker, the keystroke echo over /ws/workspace/terminal, and a flood's
 * throughput with 1 and with 50 viewers (real `ws` clients in a process of their own, viewers.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { request } from 'undici';
import WebSocket from 'ws';
import type { SeqResult, WsFloodRound } from '../protocol';
import { BrokerHttp } from './brokerHttp';
import { runInterleaved, runSequential } from './drive';
import { nowMs, sleep } from '../lib/stats';
import { metricValue } from '../lib/metricsText';
import type { ViewerCounts, ViewerRequest } from './viewers';
import { openPtyFloor } from './ptyFloor';

interface WorkspaceAnswer {
  job_id: string;
  returncode: number | null;
}

/**
 * POST /api/execute of `true`, the pool API's execute of `true` on a lease, and the PTY floor (a bare
 * bash in a terminal, ptyFloor.ts), interleaved.
 */
export async function wsExecCompare(url: string, backend: 'local' | 'docker', n: number, warmup: number, maxMs: number): Promise<SeqResult[]> {
  const http = new BrokerHttp(url, 1);
  const floor = await openPtyFloor(backend);
  try {
    let sessionId = await http.acquire();
    const workspace = async (): Promise<void> => {
      const r = await http.post<WorkspaceAnswer>('/api/execute', { command: 'true' });
      if (r.returncode !== 0) throw new Error(`/api/execute true: returncode ${r.returncode}`);
    };
    const pool = async (): Promise<void> => {
      try {
        await http.executeChecked(sessionId, 'true', 0);
      } catch (err) {
        sessionId = await http.acquire(); // a lease broken under us (its container lost) counts once, not per call after
        throw err;
      }
    };
    const results = await runInterleaved([workspace, pool, floor.op], n, warmup, maxMs);
    await http.release(sessionId);
    return results;
  } finally {
    await floor.close();
    await http.close();
  }
}

/**
 * One key at a time into the default workspace's terminal at its prompt, each timed from the send to
 * the first message back: a letter (readline echoes it), then DEL (readline erases it), so the line
 * never grows.
 */
export async function wsEcho(url: string, n: number, warmup: number, maxMs: number): Promise<SeqResult> {
  const socket = new WebSocket(url.replace(/^http/, 'ws') + '/ws/workspace/terminal');
  let waiter: ((data: Buffer) => void) | null = null;
  socket.on('message', (data: Buffer) => {
    const w = waiter;
    waiter = null;
    w?.(data);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  try {
    await sleep(500); // the scrollback and the prompt arrive first
    let letter = true;
    const key = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const sent = letter ? 'a' : '\x7f';
        const timer = setTimeout(() => reject(new Error('no echo within 5 s')), 5000);
        waiter = (data) => {
          clearTimeout(timer);
          if (sent === 'a' && !data.includes('a')) reject(new Error(`echo of 'a' was ${JSON.stringify(data.toString('latin1'))}`));
          else resolve();
        };
        letter = !letter;
        socket.send(Buffer.from(sent), { binary: true });
      });
    return await runSequential(key, n, warmup, maxMs);
  } finally {
    socket.close();
  }
}

/** The viewer process (viewers.ts, compiled beside this file), one request at a time. */
class Viewers {
  private constructor(private readonly child: ChildProcess) {}

  static async start(): Promise<Viewers> {
    const child = fork(path.join(__dirname, 'viewers.js'), [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const viewers = new Viewers(child);
    await viewers.next();
    return viewers;
  }

  private next<T>(): Promise<T> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`the viewer process exited (${code})`));
      this.child.once('exit', onExit);
      this.child.once('message', (m: { ok: boolean; result?: unknown; error?: string }) => {
        this.child.off('exit', onExit);
        if (m.ok) resolve(m.result as T);
        else reject(new Error(`viewer process: ${m.error}`));
      });
    });
  }

  ask<T>(req: ViewerRequest): Promise<T> {
    const answer = this.next<T>();
    this.child.send(req);
    return answer;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/** The broker's CPU so far (prom-client's process_cpu_seconds_total), ms, and its viewers' catch-ups, from /metrics. */
async function brokerCounts(url: string): Promise<{ cpuMs: number; resyncs: number }> {
  const res = await request(`${url}/metrics`);
  const text = await res.body.text();
  const resyncs = ['events', 'terminal'].map((stream) => metricValue(text, `broker_workspace_viewers_behind_total\\{stream="${stream}",outcome="resync"\\}`) || 0);
  return { cpuMs: metricValue(text, 'process_cpu_seconds_total') * 1000, resyncs: resyncs[0] + resyncs[1] };
}

/** The flood's last line, printed after it: a viewer with this among its last bytes is current. */
export const FLOOD_END_MARKER = 'flood-42-end';
const FLOOD_END = '; echo flood-$((6*7))-end';

/** The exit event of `jobId` from the workspace's logs, polled until it is there. */
async function exitEvent(url: string, jobId: string, deadline: number): Promise<{ returncode: number | null; duration_ms: number }> {
  for (;;) {
    const res = await request(`${url}/api/workspace/logs?offset=-20&limit=20`);
    const events = (await res.body.json()) as { type: string; job_id?: string; returncode: number | null; duration_ms: number }[];
    const exit = events.find((e) => e.type === 'exit' && e.job_id === jobId);
    if (exit) return exit;
    if (nowMs() > deadline) throw new Error(`no exit event for the flood's job ${jobId}`);
    await sleep(50);
  }
}

/**
 * Rounds of one flood command in the default workspace, alternating `counts` viewers (e.g. 1, 50, 1,
 * 50): each round opens its viewers, runs the flood through /api/execute, takes the job's duration
 * from its exit event (start mark to end mark, as the broker saw the terminal), and checks what each
 * viewer received.
 */
export async function wsFlood(url: string, command: string, floodBytes: number, kind: 'terminal' | 'events', counts: number[], timeoutS: number): Promise<WsFloodRound[]> {
  const viewers = await Viewers.start();
  const http = new BrokerHttp(url, 1);
  const wsUrl = url.replace(/^http/, 'ws') + (kind === 'terminal' ? '/ws/workspace/terminal' : '/ws/workspace');
  const rounds: WsFloodRound[] = [];
  try {
    for (const count of counts) {
      await viewers.ask({ open: { url: wsUrl, sockets: count } });
      await sleep(300); // scrollback or nothing: let it land before the flood
      const before = await viewers.ask<ViewerCounts>({ count: true });
      const brokerBefore = await brokerCounts(url);
      const t0 = nowMs();
      const answer = await http.post<WorkspaceAnswer>('/api/execute', { command: command + FLOOD_END, wait: 30 });
      const exit = await exitEvent(url, answer.job_id, t0 + timeoutS * 1000);
      const wallMs = nowMs() - t0;
      if (exit.returncode !== 0) throw new Error(`flood '${command}': returncode ${exit.returncode}`);
      // The last bytes reach the viewers (those behind catch up as soon as they have read their backlog).
      let after = await viewers.ask<ViewerCounts>({ count: true, marker: FLOOD_END_MARKER });
      for (let waited = 0; after.current + after.closed < count && waited < 10_000; waited += 100) {
        await sleep(100);
        after = await viewers.ask<ViewerCounts>({ count: true, marker: FLOOD_END_MARKER });
      }
      const brokerAfter = await brokerCounts(url);
      const got = after.bytes.map((b, i) => b - before.bytes[i]);
      const messages = after.messages.map((m, i) => m - before.messages[i]);
      rounds.push({
        viewers: count,
        durationMs: exit.duration_ms,
        wallMs,
        bytesPerSec: (floodBytes / exit.duration_ms) * 1000,
        viewerBytesMin: Math.min(...got),
        viewerMessagesMin: Math.min(...messages),
        viewerMessagesMax: Math.max(...messages),
        dropped: after.closed,
        current: after.current,
        resyncs: brokerAfter.resyncs - brokerBefore.resyncs,
        brokerCpuMs: brokerAfter.cpuMs - brokerBefore.cpuMs,
        viewersCpuMs: after.cpuMs - before.cpuMs,
      });
      await viewers.ask({ close: true });
    }
    return rounds;
  } finally {
    await http.close();
    await viewers.stop();
  }
}
