/**
 * An acquire through a gateway (POST /session/acquire and /session/acquire_group): placed on a node
 * (placement.ts), sent on to another one when the first is full, draining or down, within the
 * caller's acquire_timeout, and served in arrival order among the gateway's acquires of its kind
 * (acquireLine.ts).
 *
 * - A node the facts say has a free session (available, less the acquires waiting there and this
 *   gateway's own it does not count yet) gets a short try (two heartbeats: the facts' age); a 503
 *   then means it filled meanwhile, and the next node is tried. A node picked while every node is
 *   full (the shortest queue) gets the rest of the time, and the acquire waits in its FIFO queue.
 * - With a request_id, the store records which node the acquire went to (put if absent): a retry
 *   through any gateway goes to the same node, whose own request_id window gives the same answer.
 *   The record moves only with the acquire (compare and swap). When the store is away, the gateway
 *   places on its own and the dedupe holds on that node only. Such an acquire is alone of its kind
 *   and outlives its client, as on a standalone broker.
 * - An acquire that names an image is placed by it (imagePlacement.ts: where it is warm, else held,
 *   else by rendezvous hashing of the image over the nodes with room); its 200 says which rule
 *   placed it (PLACEMENT_HEADER), beside the node's own `image_cost`. A node without room for the
 *   image (503 `node_full`, `image_disk_full`) lets the next node serve it.
 * - Its body is read whole (bounded by BROKER_MAX_BODY_BYTES): it may be sent twice. A final 503
 *   `pool_exhausted` reads as a standalone broker's would, with the caller's timeout.
 *
 * Each call to a node, its cut and a grant's release are acquireCalls.ts's.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AbortedError, PoolExhaustedError } from '../../common/errors';
import { parseJsonBytes } from '../../http/body';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendErrorReply } from '../../http/httpJson';
import { ifUndelivered } from '../../http/clientGone';
import { DEFAULT_POOL } from '../../core/pool/poolRegistry';
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';
import type { ClusterStore, NodeRecord } from '../clusterStore';
import { NoNodesError, type NodeTlsRefusedError } from '../clusterErrors';
import type { Membership } from './membership';
import { freeSessions, placeAcquire, type Placement } from './placement';
import { placeByImage, type ImageTier } from './imagePlacement';
import { imageOnNode } from '../node/imageSummary';
import { canonicalImage } from '../../core/images/imageRef';
import { clientLeft, relay, type NodeClients } from './nodeForwarder';
import type { GatewayMetrics } from './gatewayMetrics';
import type { UnseenAcquires } from './unseenAcquires';
import { AcquireLine, AcquireTicket, AcquireWorker, type Outcome, type ReadAnswer } from './acquireLine';
import { codeOf, kindOf, sendRead, waitedLess } from './acquireAnswers';
import { AcquireCalls, type AcquireCall } from './acquireCalls';

/** The rule that placed a granted acquire by image (warm, held, cold): the trainer may log it beside `image_cost`. */
export const PLACEMENT_HEADER = 'x-broker-placement';

/** The line key of the acquires of one image (no pool name has a space). */
const IMAGE_LINE = '@image ';
/** The label of acquires by image in the gateway's per-pool series and Retry-After memory (one, however many images). */
const BY_IMAGE = '@image';

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

export class GatewayAcquire {
  private readonly unseen: UnseenAcquires;
  private readonly nodeCalls: AcquireCalls;
  private readonly line = new AcquireLine();
  /** The Retry-After nodes last gave with a pool_exhausted, per pool. */
  private readonly retryAfter = new Map<string, string>();

  /** Acquires unanswered, by pool (broker_gateway_acquires_waiting). */
  private readonly waiting = new Map<string, number>();

  /** What each waiting acquire asked for, for its probes. */
  private readonly calls = new WeakMap<AcquireTicket, AcquireCall>();

  constructor(private readonly deps: AcquireDeps) {
    this.unseen = deps.unseen;
    this.nodeCalls = new AcquireCalls(deps);
    deps.membership.onRecord((record) => this.probe(record));
    deps.metrics.countWaiting(() => this.waiting);
  }

  /** `bytes`: the body, read whole by the gateway (bounded by BROKER_MAX_BODY_BYTES). */
  async serve(req: IncomingMessage, res: ServerResponse, path: string, bytes: Buffer): Promise<void> {
    const parsed = parseJsonBytes(bytes);
    const body = (parsed ?? {}) as Record<string, unknown>;
    const asked = body.acquire_timeout;
    const askedOk = asked === undefined || asked === null || (typeof asked === 'number' && Number.isFinite(asked) && asked > 0);
    const pool = typeof body.pool === 'string' ? body.pool : DEFAULT_POOL;
    const timeoutMs = typeof asked === 'number' && askedOk ? Math.max(1, Math.round(asked * 1000)) : this.deps.acquireTimeoutMs;
    const requestId = typeof body.request_id === 'string' ? body.request_id : null;
    const image = imageOf(path, body);
    // A body that is no object, a timeout the gateway could not rewrite, a pool nobody serves, an
    // image that is no reference (or beside a pool) or that no node may serve: any node answers as a
    // standalone broker would (its 400, 403 or 501), with the body as it came.
    const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
    const lineKey = image ? IMAGE_LINE + image.ref : pool;
    const probe: AcquireCall = { req, path, body, pool, pinKey: null, image: image ?? null };
    if (image === undefined || !this.place(probe, new Set()) || !isObject || !askedOk) {
      const any = this.deps.membership.list().find((m) => m.record.health !== 'unhealthy') ?? this.deps.membership.list()[0];
      if (!any) throw new NoNodesError('is registered');
      return relay(await this.nodeCalls.send(any.record, req, path, parsed === undefined ? null : JSON.stringify(parsed)), res);
    }
    const pinKey = requestId ? `${path === '/session/acquire' ? 'a' : 'g'}/${createHash('sha256').update(requestId).digest('hex')}` : null;
    // A client gone while its body was read: nobody to serve (its close came before any listener).
    if (res.closed) return;
    // With a request_id the acquire outlives its client (its retry comes for the lease), alone of its kind.
    const ticket = new AcquireTicket(requestId ? null : kindOf(path, pool, body), lineKey, Date.now() + timeoutMs);
    this.line.join(ticket);
    if (!requestId) {
      // Its worker may be in a call that outlives the deadline (taken over from an older acquire).
      ticket.expireAt(() => this.line.leave(ticket, { kind: 'exhausted', retryAfter: this.retryAfterFor(ticket) }));
      clientLeft(res).addEventListener('abort', () => this.line.leave(ticket, { kind: 'failed', err: new AbortedError('acquire') }), { once: true });
    }
    const call: AcquireCall = { ...probe, pinKey };
    if (!requestId) this.calls.set(ticket, call);
    void this.work(ticket.worker.current, call, ticket.kind);
    const label = image ? BY_IMAGE : pool;
    this.waiting.set(label, (this.waiting.get(label) ?? 0) + 1);
    let outcome: Outcome;
    try {
      outcome = await ticket.outcome;
    } finally {
      const left = (this.waiting.get(label) ?? 1) - 1;
      if (left > 0) this.waiting.set(label, left);
      else this.waiting.delete(label);
    }
    this.answer(res, outcome, timeoutMs, path, requestId !== null);
  }

  private answer(res: ServerResponse, outcome: Outcome, timeoutMs: number, path: string, pinned: boolean): void {
    if (res.destroyed) {
      if (outcome.kind === 'granted' && !pinned) this.nodeCalls.giveBack(outcome.read);
      return;
    }
    switch (outcome.kind) {
      case 'granted':
        // A client gone before its answer was written takes nobody's session: it goes back at once.
        if (!pinned) ifUndelivered(res, () => this.nodeCalls.giveBack(outcome.read));
        return sendRead(res, outcome.read);
      case 'answer':
        return sendRead(res, outcome.read);
      case 'failed':
        throw outcome.err;
      case 'exhausted': {
        // Every node full until the deadline: the standalone broker's answer for the caller's timeout.
        const reply = poolErrorFormat.reply(new PoolExhaustedError(timeoutMs), `POST ${path}`);
        reply.headers['Retry-After'] = outcome.retryAfter;
        sendErrorReply(res, reply);
      }
    }
  }

  /**
   * Moves `worker`'s acquire from node to node until a node grants it, answers for good, or its
   * owner's time is up; a grant goes to the oldest waiting acquire of its kind (acquireLine.ts).
   */
  private async work(worker: AcquireWorker, call: AcquireCall, kind: string | null): Promise<void> {
    let last: ReadAnswer | null = null;
    let capped = false;
    let node: NodeRecord | null = null;
    /** The last node TLS refused: said when no node answered at all (a gateway whose certificate no node takes). */
    let refusedTls: NodeTlsRefusedError | null = null;
    try {
      for (;;) {
        const owner = worker.owner;
        if (!owner || owner.settled) return;
        let placement = this.place(call, worker.tried);
        if (!placement && capped && Date.now() < owner.deadline) {
          // The last node held it its own acquire timeout, shorter than the time left, and stayed full: another round.
          worker.tried.clear();
          placement = this.place(call, worker.tried);
        }
        if (!placement || Date.now() >= owner.deadline) return this.finish(owner, last, call, refusedTls);
        if (node !== null) this.deps.metrics.retried();
        else if (placement.tier) this.deps.metrics.imagePlaced(placement.tier);
        node = call.pinKey ? await this.pinned(call.pinKey, node, placement.node) : placement.node;
        worker.tried.add(node.node_id);
        const remainingMs = owner.deadline - Date.now();
        // A node that looked free gets a short try, and leaves at least half the time to the next one.
        // Not an acquire by image: a node short of warm sessions starts a container for it, which a
        // short try would cut off with a 503 image_starting; it waits there (a probe may serve it elsewhere).
        const shortTry = placement.free && !call.image;
        const another = shortTry && this.place(call, worker.tried) !== null;
        const tryMs = another ? Math.min(remainingMs / 2, this.deps.freeTryMs) : remainingMs;
        const sentSeconds = Math.max(0.001, tryMs / 1000);
        const attempt = await this.nodeCalls.attempt(worker, node, call, { ...call.body, acquire_timeout: sentSeconds }, !shortTry);
        if (attempt.kind === 'answer') {
          if (attempt.read.statusCode === 200) {
            if (placement.tier) attempt.read.headers[PLACEMENT_HEADER] = placement.tier;
            if (!this.line.grant(worker, kind, attempt.read)) this.nodeCalls.giveBack(attempt.read);
          } else if (worker.owner) {
            this.line.leave(worker.owner, { kind: 'answer', read: attempt.read });
          }
          continue; // on for the acquire it took over, if any
        }
        if (attempt.kind === 'notSent' && attempt.tls) refusedTls = attempt.tls;
        if (attempt.kind === 'refused') {
          last = attempt.read;
          capped = waitedLess(attempt.read.text, sentSeconds);
          const retryAfter = attempt.read.headers['retry-after'];
          if (typeof retryAfter === 'string' && codeOf(attempt.read.text) === 'pool_exhausted') {
            this.retryAfter.set(call.image ? BY_IMAGE : call.pool, retryAfter);
            if (worker.owner) worker.owner.retryAfter = retryAfter;
          }
          if (!attempt.moveOn && worker.owner) this.line.leave(worker.owner, { kind: 'answer', read: attempt.read });
        }
      }
    } catch (err) {
      // Cut because nobody waits for it any more, or a failure its owner is told of.
      if (worker.owner) this.line.leave(worker.owner, { kind: 'failed', err });
    }
  }

  /**
   * A node's record shows sessions free for the acquires waiting here (each waits in some node's
   * queue): the oldest of them get a short second call there each, one per free session, so the
   * node that frees first serves the next acquire. The grant goes to the oldest of its kind, and
   * the call that acquire no longer needs is cut if it waits in a node's queue (acquireLine.ts).
   */
  private probe(record: NodeRecord): void {
    if (this.line.length === 0 || record.health === 'unhealthy') return;
    for (const pool of this.line.pools()) {
      const unseen = this.unseen.count(record.node_id, Date.now());
      let free: number;
      if (pool.startsWith(IMAGE_LINE)) free = (imageOnNode(record.images, pool.slice(IMAGE_LINE.length)).entry?.warm ?? 0) - unseen;
      else if (record.pools[pool] !== undefined) free = freeSessions(record, pool, unseen);
      else continue;
      const waiting = this.line.unprobed(pool);
      for (const ticket of waiting) {
        if (free-- <= 0) break;
        const call = this.calls.get(ticket);
        if (call) void this.probeOnce(ticket, record, call);
      }
    }
  }

  private async probeOnce(ticket: AcquireTicket, node: NodeRecord, call: AcquireCall): Promise<void> {
    const worker = new AcquireWorker(ticket);
    ticket.probe = worker;
    const tryMs = Math.min(ticket.deadline - Date.now(), this.deps.freeTryMs);
    try {
      if (tryMs <= 0) return;
      const attempt = await this.nodeCalls.attempt(worker, node, call, { ...call.body, acquire_timeout: Math.max(0.001, tryMs / 1000) }, false);
      if (attempt.kind !== 'answer' || attempt.read.statusCode !== 200) return;
      // A probe by image goes where the record shows it warm.
      if (call.image) attempt.read.headers[PLACEMENT_HEADER] = 'warm';
      if (!this.line.grant(worker, ticket.kind, attempt.read)) this.nodeCalls.giveBack(attempt.read);
    } catch {
      // The node broke or was not reached: the acquire's own worker goes on.
    } finally {
      if (ticket.probe === worker) ticket.probe = null;
    }
  }

  /** Every node tried (or the time is up): a standalone broker's 503 when they were full, else the last word. */
  private finish(owner: AcquireTicket, last: ReadAnswer | null, call: AcquireCall, refusedTls: NodeTlsRefusedError | null = null): void {
    let outcome: Outcome;
    const what = call.image ? `that serves image '${call.image.ref}'` : `that serves pool '${call.pool}'`;
    if (last === null) outcome = { kind: 'failed', err: refusedTls ?? new NoNodesError(`${what} answers`) };
    else if (codeOf(last.text) === 'pool_exhausted') outcome = { kind: 'exhausted', retryAfter: this.retryAfterFor(owner) };
    else outcome = { kind: 'answer', read: last };
    this.line.leave(owner, outcome);
  }

  /** Retry-After as the nodes last said for the acquire, or for its pool, else a standalone broker's before its first wait: 1. */
  private retryAfterFor(ticket: AcquireTicket): string {
    const label = ticket.pool.startsWith(IMAGE_LINE) ? BY_IMAGE : ticket.pool;
    return ticket.retryAfter ?? this.retryAfter.get(label) ?? '1';
  }

  /** The node for the call's next try: by its image (imagePlacement.ts), else by its pool's free sessions. */
  private place(call: AcquireCall, tried: ReadonlySet<string>): (Placement & { tier?: ImageTier }) | null {
    const nodes = this.deps.membership.list().map((m) => m.record);
    const seenAtMs = (id: string): number => this.deps.membership.get(id)?.seenAtMs ?? 0;
    const inFlight = (id: string): number => this.unseen.count(id, seenAtMs(id));
    if (call.image) return placeByImage({ nodes, image: call.image.ref, sessions: call.image.sessions, spread: call.image.spread, exclude: tried, inFlight });
    return placeAcquire({ nodes, pool: call.pool, exclude: tried, inFlight });
  }

  /**
   * The node the request_id's acquire goes to: `to`, recorded (put if absent, or moved from `from`
   * by compare and swap), unless another gateway placed or moved it first.
   */
  private async pinned(key: string, from: NodeRecord | null, to: NodeRecord): Promise<NodeRecord> {
    try {
      const ttl = this.deps.placementTtlSeconds;
      const placed = from === null ? await this.deps.store.placeOnce(key, to.node_id, ttl) : await this.deps.store.movePlacement(key, from.node_id, to.node_id, ttl);
      return this.deps.membership.get(placed)?.record ?? to;
    } catch (err) {
      logger.warn({ err: errorMessage(err) }, 'request_id placement not recorded (store away): placed by this gateway alone');
      return to;
    }
  }
}

/**
 * The image an acquire names, as placement reads it: canonical, with the sessions it takes at once
 * (an acquire_group's `n`; 1 when that is no count: the node's 400 says so) and whether they are
 * spread. null: no image. undefined: an image no node would take (no reference, or beside a pool).
 */
function imageOf(path: string, body: Record<string, unknown>): AcquireCall['image'] | undefined {
  if (body.image === undefined || body.image === null) return null;
  const ref = typeof body.image === 'string' ? canonicalImage(body.image) : null;
  if (ref === null || (body.pool !== undefined && body.pool !== null)) return undefined;
  const group = path !== '/session/acquire';
  const n = group && Number.isInteger(body.n) && (body.n as number) > 0 ? (body.n as number) : 1;
  return { ref, sessions: n, spread: group && body.spread === true };
}
