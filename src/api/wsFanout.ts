/**
 * One stream (a workspace's events, or its terminal's bytes) sent to many WebSocket viewers without
 * the viewers costing the stream. Each message is framed once (RFC 6455 5.2: a server's frames are
 * unmasked, and this server offers no compression, so a frame is the same bytes for every viewer),
 * and the frames since the last flush go to each viewer as one write of one shared buffer. Per
 * viewer, a flood then costs a write per flush, not a `send` per message: 50 viewers of a terminal
 * flood would otherwise take the broker's CPU from the terminal itself.
 *
 * Interactive output (a keystroke's echo) is flushed at the end of the event-loop turn it arrived
 * in. Bulk output (a flush of BULK_BYTES or more) switches to a flush every BULK_FLUSH_MS until a
 * flush carries less: a terminal shows 60 frames a second at most, so that costs a viewer nothing.
 *
 * The frames are written on the connection's own socket (the upgrade request's), between `ws`'s own
 * writes: with no compression `ws` writes each of its frames (pings, a close) at once and whole, so
 * frames never interleave. A viewer whose unsent bytes pass `bufferBytes` is cut at once (a close
 * frame would wait behind what it does not read).
 */
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';

/** A flush this big means bulk output. */
const BULK_BYTES = 4096;
const BULK_FLUSH_MS = 10;

const OPCODE_TEXT = 0x1;
const OPCODE_BINARY = 0x2;
const FIN = 0x80;

/** A whole, unmasked frame carrying `payload` (a string as UTF-8, written straight into the frame). */
export function frameOf(payload: Buffer | string, binary: boolean): Buffer {
  const n = typeof payload === 'string' ? Buffer.byteLength(payload, 'utf8') : payload.length;
  const headerBytes = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerBytes + n);
  frame[0] = FIN | (binary ? OPCODE_BINARY : OPCODE_TEXT);
  if (n < 126) frame[1] = n;
  else if (n < 65536) {
    frame[1] = 126;
    frame.writeUInt16BE(n, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(n), 2);
  }
  if (typeof payload === 'string') frame.write(payload, headerBytes, 'utf8');
  else payload.copy(frame, headerBytes);
  return frame;
}

interface Viewer {
  ws: WebSocket;
  socket: Socket;
  /** Frames of the pending batch published before it joined (it has them already). */
  skip: number;
}

export class WsFanout {
  private readonly viewers = new Set<Viewer>();
  private batch: Buffer[] = [];
  private batchBytes = 0;
  private scheduled = false;
  private bulk = false;

  constructor(
    private readonly binary: boolean,
    private readonly bufferBytes: number,
  ) {}

  get size(): number {
    return this.viewers.size;
  }

  /** Frames a message for every viewer. */
  publish(payload: Buffer | string): void {
    const frame = frameOf(payload, this.binary);
    this.batch.push(frame);
    this.batchBytes += frame.length;
    this.schedule();
  }

  /**
   * A viewer joins: `first` (its replay, the terminal's recent past) goes out now, then every message
   * published from now on. Returns its removal.
   */
  join(ws: WebSocket, socket: Socket, first: (Buffer | string)[]): () => void {
    const viewer: Viewer = { ws, socket, skip: this.batch.length };
    if (first.length > 0) this.write(viewer, Buffer.concat(first.map((p) => frameOf(p, this.binary))));
    this.viewers.add(viewer);
    return () => this.viewers.delete(viewer);
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    if (this.bulk) setTimeout(() => this.flush(), BULK_FLUSH_MS);
    else setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const frames = this.batch;
    this.bulk = this.batchBytes >= BULK_BYTES;
    this.batch = [];
    this.batchBytes = 0;
    if (frames.length === 0) return;
    const all = frames.length === 1 ? frames[0] : Buffer.concat(frames);
    for (const viewer of this.viewers) {
      const skip = viewer.skip;
      viewer.skip = 0;
      if (skip >= frames.length) continue;
      this.write(viewer, skip === 0 ? all : Buffer.concat(frames.slice(skip)));
    }
    // Bulk output goes on: the next flush waits BULK_FLUSH_MS even if nothing more came yet.
    if (this.bulk) this.schedule();
  }

  private write(viewer: Viewer, data: Buffer): void {
    const { ws, socket } = viewer;
    if (ws.readyState !== ws.OPEN || socket.destroyed) {
      this.viewers.delete(viewer);
      return;
    }
    if (socket.writableLength > this.bufferBytes) {
      this.viewers.delete(viewer);
      ws.terminate();
      return;
    }
    socket.write(data);
  }
}
