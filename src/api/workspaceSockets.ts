/**
 * The workspace's WebSockets:
 * - /ws/workspace: its events as JSON text messages, in seq order; `?since=SEQ` first replays the
 *   ring from SEQ (a `dropped` message first when part of that is gone), then goes live.
 * - /ws/workspace/terminal: the terminal's raw bytes out (binary messages, the recent past first);
 *   in, binary messages are keys, text ones JSON: {"type":"input","data":"..."} or
 *   {"type":"resize","cols":C,"rows":R} (plain text that is not JSON is taken as keys).
 *
 * A viewer never slows the terminal or the others: each stream is framed once and written to every
 * viewer as one buffer per flush (wsFanout.ts), and a viewer whose unsent bytes pass
 * BROKER_WORKSPACE_VIEWER_BUFFER_BYTES is dropped. Pings keep idle connections (and the proxies
 * between) alive.
 */
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { Workspace } from '../core/workspace/workspace';
import { WsFanout } from './wsFanout';

const PING_EVERY_MS = 15_000;
const MAX_TERMINAL_SIDE = 1000;

interface SocketOptions {
  viewerBufferBytes: number;
}

function keepAlive(socket: WebSocket, onClose: () => void): void {
  const timer = setInterval(() => socket.ping(), PING_EVERY_MS);
  timer.unref();
  socket.on('error', () => undefined); // 'close' follows
  socket.once('close', () => {
    clearInterval(timer);
    onClose();
  });
}

/** The workspace's two streams, each framed once for all its viewers (wsFanout.ts), made on first use. */
const fanouts = new WeakMap<Workspace, { events: WsFanout; terminal: WsFanout }>();

function fanoutsOf(ws: Workspace, options: SocketOptions): { events: WsFanout; terminal: WsFanout } {
  let f = fanouts.get(ws);
  if (!f) {
    const made = { events: new WsFanout(false, options.viewerBufferBytes), terminal: new WsFanout(true, options.viewerBufferBytes) };
    // Once per workspace, for as long as it lives: each event is serialized once, whoever watches, and not at all when nobody does.
    ws.events.subscribe(null, (event) => made.events.size > 0 && made.events.publish(JSON.stringify(event)), () => undefined);
    ws.scrollback.attach((chunk) => made.terminal.size > 0 && made.terminal.publish(chunk));
    fanouts.set(ws, made);
    f = made;
  }
  return f;
}

export function acceptEventStream(socket: WebSocket, ws: Workspace, query: string, raw: Socket, options: SocketOptions): void {
  const value = new URLSearchParams(query).get('since');
  const since = value !== null && /^\d+$/.test(value) ? Number(value) : null;
  if (value !== null && since === null) {
    socket.close(1003, "'since' must be a non-negative integer seq_id");
    return;
  }
  const first: string[] = [];
  if (since !== null && since < ws.events.next) {
    const { dropped, events } = ws.events.slice(since, ws.events.next - since);
    if (dropped) first.push(JSON.stringify(dropped));
    for (const e of events) first.push(JSON.stringify(e));
  }
  // The replay and the joining happen in one synchronous step: no gap, no duplicate.
  keepAlive(socket, fanoutsOf(ws, options).events.join(socket, raw, first));
}

export function acceptTerminal(socket: WebSocket, ws: Workspace, raw: Socket, options: SocketOptions): void {
  const recent = ws.scrollback.recent();
  const detach = fanoutsOf(ws, options).terminal.join(socket, raw, recent.length > 0 ? [recent] : []);
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) return ws.input(data);
    const text = data.toString('utf8');
    const message = parseMessage(text);
    if (!message) return ws.input(text);
    if (message.type === 'input' && typeof message.data === 'string') return ws.input(message.data);
    if (message.type === 'resize' && isSide(message.cols) && isSide(message.rows)) return ws.resize(message.cols, message.rows);
    ws.input(text);
  });
  keepAlive(socket, detach);
}

function parseMessage(text: string): Record<string, unknown> | null {
  if (!text.startsWith('{')) return null;
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function isSide(n: unknown): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_TERMINAL_SIDE;
}
