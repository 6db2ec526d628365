/**
 * Server-sent event streams for routers (execd's command and code output, task events): the headers,
 * keep-alive frames while nothing else is said, backpressure, and an end when the client leaves.
 *
 * Opened from a route handler after its checks: an error thrown before `openEventStream` is answered
 * in the router's error format like any other; once the stream is open, errors belong in the stream.
 */
import type { ServerResponse } from 'node:http';

export interface EventStreamOptions {
  /** A keep-alive frame is written after this many ms of silence, so proxies keep the stream open. */
  keepAliveMs?: number;
  /** The keep-alive frame (default an SSE comment; execd sends a `ping` event of its own). */
  keepAliveFrame?: () => string;
}

export interface SseMessage {
  event?: string;
  id?: string;
  /** One line or many: each line becomes a `data:` field. */
  data: string;
}

const DEFAULT_KEEP_ALIVE_MS = 15_000;
const COMMENT_FRAME = (): string => ': keep-alive\n\n';
const HEADERS = ['Content-Type', 'text/event-stream; charset=utf-8', 'Cache-Control', 'no-cache', 'Connection', 'keep-alive', 'X-Accel-Buffering', 'no'];

export class EventStream {
  private readonly controller = new AbortController();
  private readonly keepAlive: NodeJS.Timeout;

  constructor(
    private readonly res: ServerResponse,
    options: EventStreamOptions = {},
  ) {
    res.writeHead(200, HEADERS);
    res.flushHeaders(); // the client sees the stream open before the first event
    const frame = options.keepAliveFrame ?? COMMENT_FRAME;
    this.keepAlive = setInterval(() => this.writeFrame(frame()), options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS);
    this.keepAlive.unref();
    res.once('close', () => this.ended());
  }

  /** Aborts when the stream ends: the client left, or `close()`. Work feeding the stream stops on it. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get isOpen(): boolean {
    return !this.controller.signal.aborted;
  }

  /** An SSE message. False: the socket's buffer is full, wait for `drained()` before the next. */
  send(message: SseMessage): boolean {
    let frame = '';
    if (message.event !== undefined) frame += `event: ${oneLine(message.event)}\n`;
    if (message.id !== undefined) frame += `id: ${oneLine(message.id)}\n`;
    for (const line of message.data.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`;
    return this.writeFrame(frame + '\n');
  }

  /** A frame as is, for streams framed their own way (execd writes bare JSON followed by a blank line). */
  writeFrame(frame: string): boolean {
    if (!this.isOpen) return false;
    this.keepAlive.refresh();
    return this.res.write(frame);
  }

  /** Resolves when the stream can take more, or when it ended. */
  drained(): Promise<void> {
    if (!this.isOpen) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.res.off('drain', done);
        this.controller.signal.removeEventListener('abort', done);
        resolve();
      };
      this.res.once('drain', done);
      this.controller.signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Ends the stream (the client sees the end of the response). Safe to call twice. */
  close(): void {
    if (!this.res.writableEnded) this.res.end();
    this.ended();
  }

  private ended(): void {
    clearInterval(this.keepAlive);
    if (!this.controller.signal.aborted) this.controller.abort();
  }
}

function oneLine(field: string): string {
  if (/[\r\n]/.test(field)) throw new Error(`an SSE field must be one line, got ${JSON.stringify(field)}`);
  return field;
}

export function openEventStream(res: ServerResponse, options?: EventStreamOptions): EventStream {
  return new EventStream(res, options);
}
