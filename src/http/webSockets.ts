/**
 * The WebSocket half of the seam: one `ws` server without a server of its own (`noServer`), fed by
 * the HTTP server's 'upgrade' event after the seam has authorized and routed the request. Handshake
 * errors are answered in JSON like every other error; sockets still open at shutdown are closed.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { BadRequestError, ShuttingDownError } from '../common/errors';
import type { ErrorFormat } from './errorFormats';
import { sendErrorReplyOnSocket } from './httpJson';
import { logger } from '../common/logger';

/** How long sockets get to answer a close frame at shutdown before they are cut. */
const CLOSE_GRACE_MS = 1_000;
/** 1001: the endpoint is going away. */
const GOING_AWAY = 1001;

export class WebSocketUpgrades {
  private readonly server: WebSocketServer;
  /** The format of the route each handshake was for, for its errors (set just before handleUpgrade). */
  private readonly formats = new WeakMap<IncomingMessage, ErrorFormat>();
  private closing = false;

  /** `maxPayloadBytes`: one message may be as large as one HTTP body (BROKER_MAX_BODY_BYTES), no larger. */
  constructor(maxPayloadBytes: number) {
    this.server = new WebSocketServer({ noServer: true, maxPayload: maxPayloadBytes });
    // A listener here makes `ws` hand us its handshake errors instead of answering them in HTML.
    this.server.on('wsClientError', (err: Error, socket: Duplex, req: IncomingMessage) => {
      const format = this.formats.get(req);
      const refused = new BadRequestError(`WebSocket handshake refused: ${err.message}`);
      if (format) sendErrorReplyOnSocket(socket, format.reply(refused, `${req.method} ${req.url}`));
      else socket.destroy();
    });
  }

  /** Completes the handshake; `accept` then owns the socket. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, format: ErrorFormat, accept: (ws: WebSocket) => void): void {
    // An upgrade on a kept-alive connection after close() would outlive the shutdown: the server no
    // longer tracks upgraded sockets.
    if (this.closing) return sendErrorReplyOnSocket(socket, format.reply(new ShuttingDownError(), `${req.method} ${req.url}`));
    this.formats.set(req, format);
    this.server.handleUpgrade(req, socket, head, (ws) => {
      try {
        accept(ws);
      } catch (err) {
        logger.error({ err, where: req.url }, 'WebSocket route failed to take its socket');
        ws.close(1011, 'internal error');
      }
    });
  }

  /** Open WebSockets (for tests and /health-like reports). */
  get openCount(): number {
    return this.server.clients.size;
  }

  /** Sends every open socket a close frame, and cuts those that have not closed after a grace. */
  async close(): Promise<void> {
    this.closing = true;
    const open = [...this.server.clients];
    if (open.length === 0) return;
    const closed = open.map((ws) => new Promise<void>((resolve) => ws.once('close', () => resolve())));
    for (const ws of open) ws.close(GOING_AWAY, 'broker shutting down');
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)));
    await Promise.race([Promise.all(closed), grace]);
    clearTimeout(timer);
    for (const ws of this.server.clients) ws.terminate();
  }
}
