/**
 * The workspace's WebSockets:
 * - /ws/workspace: its events as JSON text messages, in seq order; `?since=SEQ` first replays the
 *   ring from SEQ (a `dropped` message first when part of that is gone), then goes live.
 * - /ws/workspace/terminal: the terminal's raw bytes out (binary messages, the recent past first);
 *   in, binary messages are keys, text ones JSON: {"type":"input","data":"..."} or
 *   {"type":"resize","cols":C,"rows":R} (plain text that is not JSON is taken as keys).
 *
 * A viewer never slows the terminal or the others: each stream is framed once and written to every
 * viewer as one buffer per flush (wsFanout.ts). A viewer that falls behind (more unsent than
 * BROKER_WORKSPACE_VIEWER_BUFFER_BYTES on /ws/workspace, BROKER_WORKSPACE_TERMINAL_BUFFER_BYTES on
 * the terminal, which is also a terminal viewer's share of a burst of bulk output) gets nothing more
 * until it can take it, then catches up: an events viewer with a `dropped` notice for what the ring
 * no longer has and the rest from the ring, a terminal viewer with a reset and the screen's last lines
 * (redrawn four times a second while the burst lasts, and once more at its end). One whose
 * socket has not emptied within BROKER_WORKSPACE_VIEWER_STALL_MS does not read, and is cut. Pings keep idle
 * connections (and the proxies between) alive.
 */
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { Workspace } from '../../core/workspace/workspace';
import { WsFanout } from '../../http/wsFanout';
import type { FanoutCounts } from '../../metrics/workspaceMetrics';

const MAX_TERMINAL_SIDE = 1000;

/** RIS, "reset to initial state": the viewer's terminal starts afresh, as a new viewer's does. */
const TERMINAL_RESET = Buffer.from('\x1bc');
/** A redraw: a full screen of a large terminal (200 x 50), with room for its colours. */
const REDRAW_TAIL_BYTES = 16 * 1024;

export interface SocketOptions {
  /** Unsent bytes past which an events viewer is behind. */
  viewerBufferBytes: number;
  /** Unsent bytes past which a terminal viewer is behind (its catch-up is a redraw). */
  terminalBufferBytes: number;
  /** A viewer still behind this long does not read: it is cut. */
  viewerStallMs: number;
  /** Pings this often; a viewer that has not answered one by the next is cut. */
  pingMs: number;
  /** Where the viewers' catch-ups and cuts are counted (for /metrics). */
  counts?: { events: FanoutCounts; terminal: FanoutCounts };
}

/**
 * Pings every `pingMs` keep idle connections (and the proxies between) alive. A viewer that has not
 * answered one ping by the next is gone or does not read (its pong would come after all it holds):
 * it is cut, whether or not anything was written to it since.
 */
function keepAlive(socket: WebSocket, pingMs: number, onCut: () => void, onClose: () => void): void {
  let answered = true;
  socket.on('pong', () => (answered = true));
  const timer = setInterval(() => {
    if (!answered) {
      onCut();
      socket.terminate();
      return;
    }
    answered = false;
    socket.ping();
  }, pingMs);
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
    const stallMs = options.viewerStallMs;
    const made = {
      events: new WsFanout(
        { binary: false, lagBytes: options.viewerBufferBytes, burstBytes: null, stallMs, resync: (missed) => replayFrom(ws, missed ?? ws.events.next) },
        options.counts?.events,
      ),
      terminal: new WsFanout(
        {
          binary: true,
          lagBytes: options.terminalBufferBytes,
          burstBytes: options.terminalBufferBytes,
          stallMs,
          // A screen's worth: what a viewer behind is shown is the terminal now, not what it missed.
          resync: () => [TERMINAL_RESET, ws.scrollback.tail(REDRAW_TAIL_BYTES)],
        },
        options.counts?.terminal,
      ),
    };
    // Once per workspace, for as long as it lives: each event is serialized once, whoever watches, and not at all when nobody does.
    ws.events.subscribe(null, (event) => made.events.size > 0 && made.events.publish(ws.events.json(event), event.seq_id), () => undefined);
    ws.scrollback.attach((chunk) => made.terminal.size > 0 && made.terminal.publish(chunk));
    fanouts.set(ws, made);
    f = made;
  }
  return f;
}

/** The events from `since` on that the ring still holds, after a `dropped` notice for those it does not. */
function replayFrom(ws: Workspace, since: number): string[] {
  if (since >= ws.events.next) return [];
  const { dropped, events } = ws.events.slice(since, ws.events.next - since);
  const out = dropped ? [JSON.stringify(dropped)] : [];
  for (const e of events) out.push(ws.events.json(e));
  return out;
}

export function acceptEventStream(socket: WebSocket, ws: Workspace, query: string, raw: Socket, options: SocketOptions): void {
  const value = new URLSearchParams(query).get('since');
  const since = value !== null && /^\d+$/.test(value) ? Number(value) : null;
  if (value !== null && since === null) {
    socket.close(1003, "'since' must be a non-negative integer seq_id");
    return;
  }
  const first = since === null ? [] : replayFrom(ws, since);
  // The replay and the joining happen in one synchronous step: no gap, no duplicate.
  const detach = fanoutsOf(ws, options).events.join(socket, raw, first);
  keepAlive(socket, options.pingMs, () => options.counts && options.counts.events.cuts++, detach);
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
  keepAlive(socket, options.pingMs, () => options.counts && options.counts.terminal.cuts++, detach);
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
