/**
 * The workspace's WebSockets:
 * - /ws/workspace: its events as JSON text messages, in seq order; `?since=SEQ` first replays the
 *   ring from SEQ (a `dropped` message first when part of that is gone), then goes live.
 * - /ws/workspace/terminal: the terminal's raw bytes out (binary messages, the recent past first);
 *   in, binary messages are keys, text ones JSON: {"type":"input","data":"..."} or
 *   {"type":"resize","cols":C,"rows":R} (plain text that is not JSON is taken as keys).
 *
 * A viewer never slows the terminal or the others: events are sent without waiting, and a viewer
 * whose unsent bytes pass BROKER_WORKSPACE_VIEWER_BUFFER_BYTES is dropped (cut at once: a close frame would wait behind what it does not read). Pings keep
 * idle connections (and the proxies between) alive.
 */
import type { WebSocket } from 'ws';
import type { Workspace } from '../core/workspace/workspace';

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

/** Sends unless the viewer is too far behind; then drops it. */
function sender(socket: WebSocket, options: SocketOptions): (data: string | Buffer) => void {
  return (data) => {
    if (socket.readyState !== socket.OPEN) return;
    if (socket.bufferedAmount > options.viewerBufferBytes) {
      socket.terminate(); // a close frame would queue behind what it does not read
      return;
    }
    socket.send(data);
  };
}

export function acceptEventStream(socket: WebSocket, ws: Workspace, query: string, options: SocketOptions): void {
  const raw = new URLSearchParams(query).get('since');
  const since = raw !== null && /^\d+$/.test(raw) ? Number(raw) : null;
  if (raw !== null && since === null) {
    socket.close(1003, "'since' must be a non-negative integer seq_id");
    return;
  }
  const send = sender(socket, options);
  const unsubscribe = ws.events.subscribe(
    since,
    (event) => send(JSON.stringify(event)),
    (notice) => send(JSON.stringify(notice)),
  );
  keepAlive(socket, unsubscribe);
}

export function acceptTerminal(socket: WebSocket, ws: Workspace, options: SocketOptions): void {
  const send = sender(socket, options);
  const detach = ws.scrollback.attach((chunk) => send(chunk));
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
