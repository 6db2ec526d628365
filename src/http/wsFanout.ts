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
 * A viewer that falls behind is never waited for, and never buffered for without bound. Once more
 * than `lagBytes` of its frames are unsent it gets nothing more until its socket has taken them; then
 * it catches up with `resync` (what it missed, as the stream can still give it: the events still in
 * the ring after a `dropped` notice, or a redrawn terminal, as tmux redraws a client too slow for its
 * pane) and goes live again. Terminal viewers also have a share of each burst of bulk output
 * (`burstBytes`): the kernel's socket buffers take megabytes on loopback before a slow reader shows
 * any backlog here, so 50 viewers of a flood would each be written all of it, and those writes
 * would take the CPU the terminal itself runs on. Past its share a viewer sees the screen redrawn
 * four times a second until the burst ends, then once more, and goes live (a person reads a screen,
 * not 40 MB/s). A viewer whose socket has not emptied `stallMs` after falling behind does
 * not read: it is cut (a close frame would wait behind what it does not read).
 *
 * The frames are written on the connection's own socket (the upgrade request's), between `ws`'s own
 * writes: with no compression `ws` writes each of its frames (pings, a close) at once and whole, so
 * frames never interleave.
 */
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import type { FanoutCounts } from '../metrics/workspaceMetrics';

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

export interface FanoutOptions {
  /** Binary frames (the terminal's bytes) or text ones (JSON events). */
  binary: boolean;
  /** A viewer with more than this unsent gets nothing more until it has sent it all. */
  lagBytes: number;
  /**
   * Terminal viewers: the most of one burst of bulk output a viewer is sent. Past it, until the burst
   * ends, it gets a redraw every REDRAW_MS instead (null: no such bound, as for events).
   */
  burstBytes: number | null;
  /** A viewer still behind this long after falling behind (its socket never emptied) is cut. */
  stallMs: number;
  /**
   * What a viewer that caught up gets before it goes live again, given the key of the first message
   * it missed (publish's `key`; null when the messages carry none). A terminal viewer also gets it as
   * each redraw in the middle of a burst, after which it stays behind until the burst ends.
   */
  resync(missedKey: number | null): (Buffer | string)[];
}

/** A viewer past its share of a burst sees the screen this often until the burst ends (4 frames/s). */
const REDRAW_MS = 250;

interface Behind {
  /** The key of the first message it missed. */
  missedKey: number | null;
  /** Cuts it if its socket does not empty in time. */
  stall: NodeJS.Timeout;
  /** When it was last redrawn while behind (ms, monotonic). */
  redrawnAt: number;
}

interface Viewer {
  ws: WebSocket;
  socket: Socket;
  /** Frames of the pending batch published before it joined or caught up (it has them already). */
  skip: number;
  /** Bytes of the current burst of bulk output written to it. */
  burst: number;
  behind: Behind | null;
  /** A 'drain' listener is waiting (one at most). */
  drainArmed: boolean;
}

export class WsFanout {
  private readonly viewers = new Set<Viewer>();
  private batch: Buffer[] = [];
  /** The publish key of each frame in the batch. */
  private batchKeys: (number | null)[] = [];
  private batchBytes = 0;
  private scheduled = false;
  private bulk = false;

  constructor(
    private readonly options: FanoutOptions,
    private readonly counts: FanoutCounts = { resyncs: 0, cuts: 0 },
  ) {}

  get size(): number {
    return this.viewers.size;
  }

  /** Frames a message for every viewer; `key` (an event's seq) tells `resync` where a laggard left off. */
  publish(payload: Buffer | string, key: number | null = null): void {
    const frame = frameOf(payload, this.options.binary);
    this.batch.push(frame);
    this.batchKeys.push(key);
    this.batchBytes += frame.length;
    this.schedule();
  }

  /**
   * A viewer joins: `first` (its replay, the terminal's recent past) goes out now, then every message
   * published from now on. Returns its removal.
   */
  join(ws: WebSocket, socket: Socket, first: (Buffer | string)[]): () => void {
    const viewer: Viewer = { ws, socket, skip: this.batch.length, burst: 0, behind: null, drainArmed: false };
    if (first.length > 0) socket.write(this.frames(first));
    this.viewers.add(viewer);
    return () => this.remove(viewer);
  }

  private frames(payloads: (Buffer | string)[]): Buffer {
    return Buffer.concat(payloads.map((p) => frameOf(p, this.options.binary)));
  }

  private remove(viewer: Viewer): void {
    if (viewer.behind) clearTimeout(viewer.behind.stall);
    viewer.behind = null;
    this.viewers.delete(viewer);
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
    const keys = this.batchKeys;
    const wasBulk = this.bulk;
    this.bulk = this.batchBytes >= BULK_BYTES;
    this.batch = [];
    this.batchKeys = [];
    this.batchBytes = 0;
    // Nothing new, and no burst just ended that viewers behind wait on.
    if (frames.length === 0 && !wasBulk) return;
    const all = frames.length === 0 ? null : frames.length === 1 ? frames[0] : Buffer.concat(frames);
    for (const viewer of this.viewers) {
      const skip = viewer.skip;
      viewer.skip = 0;
      const { ws, socket } = viewer;
      if (ws.readyState !== ws.OPEN || socket.destroyed) {
        this.remove(viewer);
        continue;
      }
      if (!this.bulk) viewer.burst = 0;
      if (viewer.behind) {
        // Its resync, taken now, covers these frames.
        this.catchUp(viewer);
        continue;
      }
      if (all === null || skip >= frames.length) continue;
      const data = skip === 0 ? all : Buffer.concat(frames.slice(skip));
      if (this.bulk) viewer.burst += data.length;
      const overBurst = this.options.burstBytes !== null && viewer.burst > this.options.burstBytes;
      if (overBurst || socket.writableLength > this.options.lagBytes) this.fallBehind(viewer, keys[skip]);
      else socket.write(data);
    }
    // Bulk output goes on: the next flush waits BULK_FLUSH_MS even if nothing more came yet.
    if (this.bulk) this.schedule();
  }

  /** From now on the viewer gets nothing but its catch-up: when its socket has emptied, and (terminals) the burst allows. */
  private fallBehind(viewer: Viewer, missedKey: number | null): void {
    viewer.behind = { missedKey, stall: this.stallTimer(viewer), redrawnAt: performance.now() };
    this.armDrain(viewer);
  }

  /** 'drain' comes once a write returned false (what the socket holds passed its high-water mark). */
  private armDrain(viewer: Viewer): void {
    if (viewer.drainArmed) return;
    viewer.drainArmed = true;
    viewer.socket.once('drain', () => {
      viewer.drainArmed = false;
      if (!viewer.behind || !this.viewers.has(viewer)) return;
      this.catchUp(viewer);
      if (viewer.behind) this.armDrain(viewer);
    });
  }

  private stallTimer(viewer: Viewer): NodeJS.Timeout {
    const stall = setTimeout(() => {
      this.remove(viewer);
      this.counts.cuts++;
      viewer.ws.terminate();
    }, this.options.stallMs);
    stall.unref();
    return stall;
  }

  /**
   * A viewer behind catches up once its socket holds less than its high-water mark (else 'drain'
   * calls again). In a burst, a terminal viewer gets a redraw every REDRAW_MS and stays behind; at
   * the burst's end (or for events, at once) it gets its resync and goes live.
   */
  private catchUp(viewer: Viewer): void {
    const behind = viewer.behind!;
    if (viewer.socket.writableNeedDrain) return;
    const during = this.bulk && this.options.burstBytes !== null;
    if (during && performance.now() - behind.redrawnAt < REDRAW_MS) return;
    clearTimeout(behind.stall);
    this.counts.resyncs++;
    if (during) {
      behind.redrawnAt = performance.now();
      behind.stall = this.stallTimer(viewer);
    } else {
      viewer.behind = null;
      viewer.burst = 0;
      // Its resync is taken now and covers what the pending batch holds: skip those frames.
      viewer.skip = this.batch.length;
    }
    const first = this.options.resync(behind.missedKey);
    if (first.length > 0) viewer.socket.write(this.frames(first));
  }
}
