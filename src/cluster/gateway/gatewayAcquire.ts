/**
 * An acquire through a gateway (POST /session/acquire and /session/acquire_group): placed on a node
 * (placement.ts), sent on to another one when the first is full, draining or down, within the
 * caller's acquire_timeout.
 *
 * - A node the facts say has a free session gets a short try (two heartbeats: the facts' age); a
 *   503 then means it filled meanwhile, and the next node is tried. A node picked while every node is
 *   full gets the rest of the time, and the acquire waits in that node's queue (first come, first
 *   served there; across nodes and gateways no order holds).
 * - With a request_id, the store records which node the acquire went to (put if absent): a retry
 *   through any gateway goes to the same node, whose own request_id window gives the same answer.
 *   The record moves only with the acquire (compare and swap). When the store is away, the gateway
 *   places on its own and the dedupe holds on that node only.
 * - Its body is read whole (bounded by BROKER_MAX_BODY_BYTES): it may be sent twice. A final 503
 *   `pool_exhausted` reads as a standalone broker's would, with the caller's timeout.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { PoolExhaustedError } from '../../common/errors';
import { readJsonBody } from '../../http/body';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendErrorReply } from '../../http/httpJson';
import { DEFAULT_POOL } from '../../core/pool/poolRegistry';
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';
import type { ClusterStore, NodeRecord } from '../clusterStore';
import { NoNodesError } from '../clusterErrors';
import type { Membership } from './membership';
import { placeAcquire } from './placement';
import { clientLeft, forwardedHeaders, neverSent, relay, type NodeClients } from './nodeForwarder';
import type { GatewayMetrics } from './gatewayMetrics';
import type { UnseenAcquires } from './unseenAcquires';

/** 503 codes after which another node may serve the acquire: full, or draining. */
const MOVE_ON = new Set(['pool_exhausted', 'shutting_down']);

export interface AcquireDeps {
  membership: Membership;
  clients: NodeClients;
  store: ClusterStore;
  metrics: GatewayMetrics;
  maxBodyBytes: number;
  /** The default acquire_timeout (BROKER_ACQUIRE_TIMEOUT, as the nodes'). */
  acquireTimeoutMs: number;
  /** How long a node the facts call free gets before the next is tried. */
  freeTryMs: number;
  placementTtlSeconds: number;
  /** The gateway's sessions taken (acquires and creates) that the nodes' records do not count yet. */
  unseen: UnseenAcquires;
}

/** A 503 read whole (to see its code), for sending as it came when it is the last word. */
interface ReadAnswer {
  statusCode: number;
  headers: Dispatcher.ResponseData['headers'];
  text: string;
}

/** A live answer to relay; or a 503 read whole, and whether another node may serve; or the node refused the connection. */
type Attempt = { kind: 'answer'; answer: Dispatcher.ResponseData } | { kind: 'refused'; read: ReadAnswer; moveOn: boolean } | { kind: 'notSent' };

function codeOf(text: string): string {
  try {
    return String((JSON.parse(text) as { code?: unknown }).code);
  } catch {
    return '';
  }
}

function sendRead(res: ServerResponse, read: ReadAnswer): void {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(read.headers)) if (value !== undefined && !['connection', 'keep-alive', 'transfer-encoding'].includes(name)) headers[name] = value;
  res.writeHead(read.statusCode, headers);
  res.end(read.text);
}

export class GatewayAcquire {
  private readonly unseen: UnseenAcquires;

  constructor(private readonly deps: AcquireDeps) {
    this.unseen = deps.unseen;
  }

  async serve(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const parsed = await readJsonBody(req, this.deps.maxBodyBytes);
    const body = (parsed ?? {}) as Record<string, unknown>;
    const asked = body.acquire_timeout;
    const askedOk = asked === undefined || asked === null || (typeof asked === 'number' && Number.isFinite(asked) && asked > 0);
    const pool = typeof body.pool === 'string' ? body.pool : DEFAULT_POOL;
    const timeoutMs = typeof asked === 'number' && askedOk ? Math.max(1, Math.round(asked * 1000)) : this.deps.acquireTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    const requestId = typeof body.request_id === 'string' ? body.request_id : null;
    const signal = requestId ? undefined : clientLeft(res);
    const tried = new Set<string>();
    let placement = this.place(pool, tried);
    // A body that is no object, a timeout the gateway could not rewrite, a pool nobody serves: any
    // node answers as a standalone broker would (its 400), with the body as it came.
    const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
    if (!placement || !isObject || !askedOk) {
      const any = this.deps.membership.list().find((m) => m.record.health !== 'unhealthy') ?? this.deps.membership.list()[0];
      if (!any) throw new NoNodesError('is registered');
      return relay(await this.send(any.record, req, path, parsed === undefined ? null : JSON.stringify(parsed), signal), res);
    }
    const key = requestId ? `${path === '/session/acquire' ? 'a' : 'g'}/${createHash('sha256').update(requestId).digest('hex')}` : null;
    let node = key ? await this.pinned(key, placement.node) : placement.node;
    let last: ReadAnswer | null = null;
    for (;;) {
      tried.add(node.node_id);
      const remainingMs = deadline - Date.now();
      // A node that looked free gets a short try, and leaves at least half the time to the next one.
      const another = placement.free && this.place(pool, tried) !== null;
      const tryMs = another ? Math.min(remainingMs / 2, this.deps.freeTryMs) : remainingMs;
      const attempt = await this.attempt(node, req, path, { ...body, acquire_timeout: Math.max(0.001, tryMs / 1000) }, signal);
      if (attempt.kind === 'answer') return relay(attempt.answer, res);
      if (attempt.kind === 'refused') {
        if (!attempt.moveOn) return sendRead(res, attempt.read);
        last = attempt.read;
      }
      const next = Date.now() < deadline ? this.place(pool, tried) : null;
      if (!next) break;
      this.deps.metrics.retried();
      placement = next;
      node = key ? await this.moved(key, node, next.node) : next.node;
    }
    if (last === null) throw new NoNodesError(`that serves pool '${pool}' answers`);
    // Every node full until the deadline: the standalone broker's answer for the caller's timeout.
    if (codeOf(last.text) !== 'pool_exhausted') return sendRead(res, last);
    const reply = poolErrorFormat.reply(new PoolExhaustedError(timeoutMs), `POST ${path}`);
    const retryAfter = last.headers['retry-after'];
    if (typeof retryAfter === 'string') reply.headers['Retry-After'] = retryAfter;
    sendErrorReply(res, reply);
  }

  private place(pool: string, tried: ReadonlySet<string>) {
    const nodes = this.deps.membership.list().map((m) => m.record);
    const seenAtMs = (id: string): number => this.deps.membership.get(id)?.seenAtMs ?? 0;
    return placeAcquire({ nodes, pool, exclude: tried, inFlight: (id) => this.unseen.count(id, seenAtMs(id)) });
  }

  /** The node the request_id is placed on (this one, unless another gateway placed it first). */
  private async pinned(key: string, node: NodeRecord): Promise<NodeRecord> {
    try {
      const placed = await this.deps.store.placeOnce(key, node.node_id, this.deps.placementTtlSeconds);
      return this.deps.membership.get(placed)?.record ?? node;
    } catch (err) {
      logger.warn({ err: errorMessage(err) }, 'request_id placement not recorded (store away): placed by this gateway alone');
      return node;
    }
  }

  private async moved(key: string, from: NodeRecord, to: NodeRecord): Promise<NodeRecord> {
    try {
      const placed = await this.deps.store.movePlacement(key, from.node_id, to.node_id, this.deps.placementTtlSeconds);
      return this.deps.membership.get(placed)?.record ?? to;
    } catch (err) {
      logger.warn({ err: errorMessage(err) }, 'request_id placement not moved (store away)');
      return to;
    }
  }

  private async attempt(node: NodeRecord, req: IncomingMessage, path: string, body: unknown, signal?: AbortSignal): Promise<Attempt> {
    this.unseen.begin(node.node_id);
    let granted = false;
    try {
      const answer = await this.send(node, req, path, body === undefined ? null : JSON.stringify(body), signal);
      granted = answer.statusCode === 200;
      if (answer.statusCode !== 503) return { kind: 'answer', answer };
      const read = { statusCode: answer.statusCode, headers: answer.headers, text: await answer.body.text() };
      return { kind: 'refused', read, moveOn: MOVE_ON.has(codeOf(read.text)) };
    } catch (err) {
      if (!neverSent(err)) throw err;
      this.deps.metrics.failed(node.node_id, 'not_sent');
      return { kind: 'notSent' };
    } finally {
      this.unseen.end(node.node_id, granted);
    }
  }

  private async send(node: NodeRecord, req: IncomingMessage, path: string, body: string | null, signal?: AbortSignal): Promise<Dispatcher.ResponseData> {
    const headers = forwardedHeaders(req.headers);
    delete headers['content-length'];
    if (body !== null) headers['content-type'] = 'application/json';
    const startMs = performance.now();
    const answer = await this.deps.clients.send(node.address, { method: 'POST', path: req.url ?? path, headers, body, signal });
    this.deps.metrics.answered(node.node_id, answer.statusCode, startMs);
    return answer;
  }
}
