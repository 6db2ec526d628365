/**
 * Calls from a gateway to its nodes: keep-alive connections per node (undici; the relayed calls'
 * own in relayConnections.ts), over mutual TLS when the cluster has it (clusterTls.ts: a connection's
 * handshake is paid once, then kept, and a new one resumes its node's TLS session), the cluster
 * token added to every call, answer bodies and large request
 * bodies streamed through as they come (an upload or a long output is never held whole), hop-by-hop
 * headers dropped both ways.
 */
import net from 'node:net';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { buildConnector, Pool, util as undiciUtil, type Dispatcher } from 'undici';
import { CLUSTER_TOKEN_HEADER } from '../node/clusterGuard';
import { ACQUIRE_TAG_HEADER } from '../node/acquireCuts';
import { RelayConnections } from './relayConnections';
import { checkScheme, handshakeCut, nodeConnectOptions, type ClusterTls } from '../clusterTls';

/** Connections each gateway keeps to one node at most (for relayed calls, and as many for the others). */
const CONNECTIONS_PER_NODE = 256;
/** How long an idle connection to a node is kept (less when the node's answers say so). */
const KEEP_ALIVE_MS = 30_000;

/**
 * Not forwarded: they describe one hop, not the call (RFC 9110 7.6.1), or are the gateway's to set.
 * The client's Host goes on: the addresses a node hands out (a sandbox's endpoints, a group sandbox's
 * URL) start with the address the client called, the gateway's. A client's acquire tag is dropped:
 * tags are the gateway's own (node/acquireCuts.ts).
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', CLUSTER_TOKEN_HEADER, ACQUIRE_TAG_HEADER]);

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
  /** For the calls whose answers are read here (acquires, lists). */
  private readonly pools = new Map<string, Pool>();
  /** For the calls whose answers are relayed as they come (relayTo). */
  private readonly relays = new Map<string, RelayConnections>();

  /**
   * One TLS connector for every connection to the nodes (pooled and relayed): its cache of TLS
   * sessions is then shared, so a connection opened to a node resumes the session another one
   * made, rather than paying a full handshake. Rebuilt when the TLS files are renewed, so new
   * connections present the new certificate (and resume no session of the old one). undefined
   * over plain HTTP.
   */
  private connector: buildConnector.connector | undefined;
  /** What every connection is opened with: the connector of the moment. */
  private readonly connect: buildConnector.connector | undefined;

  constructor(
    private readonly clusterToken: string,
    /** Mutual TLS to the nodes, or null (plain HTTP): a node of the other scheme is refused (SchemeMismatchError). */
    private readonly tls: ClusterTls | null = null,
  ) {
    if (tls) {
      this.connector = buildConnector(nodeConnectOptions(tls));
      tls.onChange(() => (this.connector = buildConnector(nodeConnectOptions(tls))));
      this.connect = (options, callback) => this.connector!(options, callback);
    }
  }

  private pool(address: string): Pool {
    let pool = this.pools.get(address);
    if (!pool) {
      checkScheme(address, this.tls);
      pool = new Pool(address, { connections: CONNECTIONS_PER_NODE, keepAliveTimeout: KEEP_ALIVE_MS, connect: this.connect });
      this.pools.set(address, pool);
    }
    return pool;
  }

  private relay(address: string): RelayConnections {
    let relay = this.relays.get(address);
    if (!relay) {
      checkScheme(address, this.tls);
      relay = new RelayConnections(address, CONNECTIONS_PER_NODE, KEEP_ALIVE_MS, this.connect);
      this.relays.set(address, relay);
    }
    return relay;
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
    try {
      return this.pool(address).request(this.options(call));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  /**
   * The node's answer written to `res` as it comes, by undici's dispatch with a handler of undici's
   * own interface (RelayHandler: no body stream, no promise per part, no AbortController, and no
   * adapter object between undici and the handler per call). `onHeaders` runs once the node's
   * headers came, before they are written. A client that leaves cuts the node's call. Rejects before
   * the headers (the node was not reached or broke first: `res` untouched) or after them (the caller
   * destroys `res`).
   */
  relayTo(address: string, call: NodeCall, res: ServerResponse, onHeaders: (statusCode: number) => void): Promise<void> {
    const options = this.options(call);
    return new Promise((resolve, reject) =>
      this.relay(address).use((client, done) => client.dispatch(options, new RelayHandler(res, onHeaders, resolve, reject, done)), reject),
    );
  }

  /** Drops the clients of a node that left (their sockets are dead or about to be). */
  forget(address: string): void {
    const pool = this.pools.get(address);
    const relay = this.relays.get(address);
    this.pools.delete(address);
    this.relays.delete(address);
    void pool?.destroy().catch(() => undefined);
    void relay?.close();
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    const relays = [...this.relays.values()];
    this.pools.clear();
    this.relays.clear();
    await Promise.all([...pools.map((p) => p.destroy().catch(() => undefined)), ...relays.map((r) => r.close())]);
  }
}

class ClientLeftError extends Error {
  constructor() {
    super('the client left before its answer was sent');
  }
}

/**
 * Relays one node answer to the client's `res` as it comes, with backpressure both ways. It speaks
 * undici's handler interface itself (onConnect .. onComplete): a handler of the newer one
 * (onRequestStart ..) is wrapped per call in an adapter and a controller object, and its trailers
 * parsed, which a relay does not need. The answer's headers are parsed as that adapter parses them
 * (undici's parseHeaders), so what the client gets is as before, byte for byte.
 */
class RelayHandler implements Dispatcher.DispatchHandler {
  private abort: ((err?: Error) => void) | null = null;
  private resume: (() => void) | null = null;
  /** Paused until the client's socket drains. */
  private waitingDrain = false;
  private settled = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly headersCame: (statusCode: number) => void,
    private readonly resolve: () => void,
    private readonly reject: (err: Error) => void,
    /** Frees the connection the call had. */
    private readonly done: () => void,
  ) {
    // Left in place after the answer (the response closes right after it): settled calls ignore it.
    res.once('close', this.clientClosed);
  }

  private readonly clientClosed = (): void => {
    if (!this.settled && !this.res.writableFinished) this.abort?.(new ClientLeftError());
  };

  private readonly drained = (): void => {
    this.waitingDrain = false;
    this.resume?.();
  };

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.res.destroyed) abort(new ClientLeftError());
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // informational: the final answer follows
    this.resume = resume;
    this.headersCame(statusCode);
    this.res.writeHead(statusCode, forwardedHeaders(undiciUtil.parseHeaders(rawHeaders)));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.res.write(chunk)) return true;
    this.waitingDrain = true;
    this.res.once('drain', this.drained);
    return false;
  }

  onComplete(): void {
    this.res.end();
    this.settle();
  }

  onError(err: Error): void {
    this.settle(err);
  }

  private settle(err?: Error): void {
    if (this.settled) return;
    this.settled = true;
    if (this.waitingDrain) this.res.off('drain', this.drained);
    this.done();
    if (err) this.reject(err);
    else this.resolve();
  }
}

/**
 * Bodies that declare a length up to this are read whole before the call goes to the node: the
 * request is then written to the node in one piece, with no stream between the two sockets (a
 * stream's listeners, its flowing state and its end each cost on every call of an id-routed route,
 * whose bodies are mostly a command's few bytes). Larger bodies, and those of unknown length, stream.
 */
const WHOLE_BODY_MAX_BYTES = 64 * 1024;

/**
 * The client's request body as the node gets it: null when it has none, the bytes when it declares
 * a small length, else the request itself (streamed). Resolves undefined when the client left before
 * its body was whole (nothing is sent; nobody is left to answer).
 */
export function requestBody(req: IncomingMessage): Promise<Readable | Buffer | null | undefined> | Readable | null {
  if (req.method === 'GET' || req.method === 'HEAD') return null;
  const declared = req.headers['content-length'];
  if (declared === undefined) return req.headers['transfer-encoding'] !== undefined ? req : null;
  if (req.headers['transfer-encoding'] !== undefined || !(Number(declared) <= WHOLE_BODY_MAX_BYTES)) return req;
  return readWhole(req);
}

function readWhole(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const data = (chunk: Buffer): void => void chunks.push(chunk);
    const end = (): void => {
      req.off('close', gone);
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    };
    const gone = (): void => {
      req.off('end', end);
      resolve(undefined);
    };
    req.on('data', data);
    req.once('end', end);
    req.once('close', gone);
  });
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

/**
 * Whether a node refuses new connections now: after a broken call, tells a dead node from a cut
 * connection. A TLS port is probed the same way, by a TCP connect and no handshake: what tells a
 * dead node is whether its port still takes a connection, not what it would say over it.
 */
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

/** Probes diedListening makes, and the wait between them. */
const DYING_PROBES = 3;
const DYING_PROBE_GAP_MS = 50;

/**
 * Whether the node at `address` died, judged after a connection to it broke: its port refuses
 * connections. A process killed with SIGKILL closes its sockets one by one as it exits, so the
 * connection that broke may close while its listening socket still takes one: a port that still
 * answers is probed again a few times before the node is judged alive (and the break a 502).
 */
export async function diedListening(address: string): Promise<boolean> {
  for (let probe = 1; ; probe++) {
    if (await refusesConnections(address)) return true;
    if (probe === DYING_PROBES) return false;
    await new Promise((r) => setTimeout(r, DYING_PROBE_GAP_MS));
  }
}

/**
 * Whether a TLS failure with the node at `address` (tlsRefusal) is a node that died at that instant
 * rather than one that refused the gateway's certificate: a node killed in the middle of a
 * handshake cuts it as a refusing node does (handshakeCut), so its port tells them apart, as after
 * any broken call (diedListening). A failure that is a refusal for sure is not probed.
 */
export async function diedInHandshake(err: unknown, address: string): Promise<boolean> {
  return handshakeCut(err) && (await diedListening(address));
}
