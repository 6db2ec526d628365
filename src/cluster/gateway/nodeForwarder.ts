/**
 * Calls from a gateway to its nodes: one pooled keep-alive client per node (undici), the cluster
 * token added to every call, request and answer bodies streamed through as they come (an upload or a
 * long output is never held whole), hop-by-hop headers dropped both ways.
 */
import net from 'node:net';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { CLUSTER_TOKEN_HEADER } from '../node/clusterGuard';

/** Connections each gateway keeps to one node at most. */
const CONNECTIONS_PER_NODE = 256;

/**
 * Not forwarded: they describe one hop, not the call (RFC 9110 7.6.1), or are the gateway's to set.
 * The client's Host goes on: the addresses a node hands out (a sandbox's endpoints, a group sandbox's
 * URL) start with the address the client called, the gateway's.
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', CLUSTER_TOKEN_HEADER]);

/** Errors that mean the call never reached the node: it may go to another one. */
const NOT_SENT = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export function neverSent(err: unknown): boolean {
  return NOT_SENT.has((err as { code?: string }).code ?? '');
}

/** Headers less the hop-by-hop ones, both ways (a for-in loop: no entry arrays on the hot path). */
export function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

export interface NodeCall {
  method: string;
  /** Path and query, as the client sent them. */
  path: string;
  headers: Record<string, string | string[]>;
  body: Readable | Buffer | string | null;
  signal?: AbortSignal;
}

export class NodeClients {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly clusterToken: string) {}

  private pool(address: string): Pool {
    let pool = this.pools.get(address);
    if (!pool) {
      pool = new Pool(address, { connections: CONNECTIONS_PER_NODE, keepAliveTimeout: 30_000 });
      this.pools.set(address, pool);
    }
    return pool;
  }

  private options(call: NodeCall): Dispatcher.RequestOptions {
    // The call's headers are the forwarder's own copy (forwardedHeaders): the token goes into it.
    call.headers[CLUSTER_TOKEN_HEADER] = this.clusterToken;
    return {
      method: call.method as Dispatcher.HttpMethod,
      path: call.path,
      headers: call.headers,
      body: call.body,
      signal: call.signal,
      // A command may run for hours: the node's own limits bound it, not the gateway.
      headersTimeout: 0,
      bodyTimeout: 0,
    };
  }

  /** The node's answer once its headers came; its body is the caller's to read or destroy. */
  send(address: string, call: NodeCall): Promise<Dispatcher.ResponseData> {
    return this.pool(address).request(this.options(call));
  }

  /**
   * The node's answer written to `res` as it comes: undici's own dispatch with a handler that writes
   * each part of the answer to `res` (no body stream, no promise per part, no AbortController: on
   * this path each cost a measurable share of a routed call). `onHeaders` runs once the node's
   * headers came, before they are written. A client that leaves cuts the node's call. Rejects before
   * the headers (the node was not reached or broke first: `res` untouched) or after them (the caller
   * destroys `res`).
   */
  relayTo(address: string, call: NodeCall, res: ServerResponse, onHeaders: (statusCode: number) => void): Promise<void> {
    return new Promise((resolve, reject) => this.pool(address).dispatch(this.options(call), new RelayHandler(res, onHeaders, resolve, reject)));
  }

  /** Drops the client of a node that left (its sockets are dead or about to be). */
  forget(address: string): void {
    const pool = this.pools.get(address);
    this.pools.delete(address);
    void pool?.destroy().catch(() => undefined);
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
  }
}

class ClientLeftError extends Error {
  constructor() {
    super('the client left before its answer was sent');
  }
}

/** Relays one node answer to the client's `res` as it comes, with backpressure both ways. */
class RelayHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private settled = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly headersCame: (statusCode: number) => void,
    private readonly resolve: () => void,
    private readonly reject: (err: Error) => void,
  ) {
    res.once('close', this.clientClosed);
  }

  private readonly clientClosed = (): void => {
    if (!this.res.writableFinished) this.controller?.abort(new ClientLeftError());
  };

  private readonly drained = (): void => this.controller?.resume();

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.res.destroyed) controller.abort(new ClientLeftError());
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // informational: the final answer follows
    this.headersCame(statusCode);
    this.res.writeHead(statusCode, forwardedHeaders(headers));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.res.write(chunk)) return;
    controller.pause();
    this.res.once('drain', this.drained);
  }

  onResponseEnd(): void {
    this.res.end();
    this.settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.settle(err);
  }

  private settle(err?: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.res.off('close', this.clientClosed);
    this.res.off('drain', this.drained);
    if (err) this.reject(err);
    else this.resolve();
  }
}

/** The client's request body as a stream, or null when it has none. */
export function requestBody(req: IncomingMessage): Readable | null {
  if (req.method === 'GET' || req.method === 'HEAD') return null;
  return req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined ? req : null;
}

/** Aborts when the client goes away before its answer was sent (the node's call is then cut too). */
export function clientLeft(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** Writes the node's answer to the client, its body streamed. */
export async function relay(answer: Dispatcher.ResponseData, res: ServerResponse): Promise<void> {
  res.writeHead(answer.statusCode, forwardedHeaders(answer.headers));
  await pipeline(answer.body, res);
}

/** Whether a node refuses new connections now: after a broken call, tells a dead node from a cut connection. */
export function refusesConnections(address: string, timeoutMs = 1_000): Promise<boolean> {
  const url = new URL(address);
  return new Promise((resolve) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) });
    const done = (refused: boolean): void => {
      socket.destroy();
      resolve(refused);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(false));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED'));
  });
}
