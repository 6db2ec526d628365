/**
 * The calls an acquire through a gateway (gatewayAcquire.ts) makes to nodes: one acquire call, its
 * answer read whole and told apart (an answer, a 503 and whether another node may serve, or not sent
 * at all), counted among the gateway's sessions the nodes' records do not show yet; the cut of a
 * call that waits in a node's queue (node/acquireCuts.ts); the release of a grant nobody waits for.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Dispatcher } from 'undici';
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';
import type { NodeRecord } from '../clusterStore';
import { NodeTlsRefusedError } from '../clusterErrors';
import { tlsReason, tlsRefusal } from '../clusterTls';
import { diedInHandshake, forwardedHeaders, neverSent, type NodeClients } from './nodeForwarder';
import type { GatewayMetrics } from './gatewayMetrics';
import type { UnseenAcquires } from './unseenAcquires';
import type { AcquireWorker, ReadAnswer } from './acquireLine';
import { ACQUIRE_TAG_HEADER } from '../node/acquireCuts';
import { grantedIds, movesOn } from './acquireAnswers';

/**
 * A live answer that is no 503 (read whole, since it may be handed to another acquire); a 503, and
 * whether another node may serve; the node was not reached (it took no connection, or, `tls`, TLS
 * with it failed: either way it ran nothing).
 */
export type Attempt = { kind: 'answer'; read: ReadAnswer } | { kind: 'refused'; read: ReadAnswer; moveOn: boolean } | { kind: 'notSent'; tls?: NodeTlsRefusedError };

/** What a worker's calls carry: the client's request, the path and body asked for. */
export interface AcquireCall {
  req: IncomingMessage;
  path: string;
  body: Record<string, unknown>;
  pool: string;
  /** The store key of its request_id, when it has one. */
  pinKey: string | null;
  /** The image it names (canonical), the sessions it takes at once and whether spread; null: none. */
  image: { ref: string; sessions: number; spread: boolean } | null;
}

export class AcquireCalls {
  constructor(private readonly deps: { clients: NodeClients; metrics: GatewayMetrics; unseen: UnseenAcquires }) {}

  /** One call to `node`; `queued`: sent to wait in its queue (cut when nobody waits for it any more, acquireLine.ts). */
  async attempt(worker: AcquireWorker, node: NodeRecord, call: AcquireCall, body: unknown, queued: boolean): Promise<Attempt> {
    this.deps.unseen.begin(node.node_id);
    let granted = false;
    try {
      // With a request_id the acquire outlives its client: its call is never cut.
      const tag = call.pinKey === null && queued ? randomUUID() : null;
      const signal = call.pinKey === null ? worker.nextCall(tag === null ? null : (abort) => this.cut(node, tag, abort)) : undefined;
      const answer = await this.send(node, call.req, call.path, JSON.stringify(body), signal, tag);
      worker.answered();
      granted = answer.statusCode === 200;
      const read = { statusCode: answer.statusCode, headers: answer.headers, text: await answer.body.text(), node };
      if (answer.statusCode !== 503) return { kind: 'answer', read };
      return { kind: 'refused', read, moveOn: movesOn(read.text) };
    } catch (err) {
      // A handshake cut by a node that died then: not sent, with no TLS reason to give.
      if (tlsRefusal(err) && !(await diedInHandshake(err, node.address))) {
        // The call never reached the node: another may take it. Said if none does.
        this.deps.metrics.failed(node.node_id, 'tls');
        logger.warn({ node: node.node_id, err: tlsReason(err) }, 'an acquire could not reach a node: its TLS failed');
        return { kind: 'notSent', tls: new NodeTlsRefusedError(node.node_id, tlsReason(err)) };
      }
      if (!neverSent(err) && !tlsRefusal(err)) throw err;
      this.deps.metrics.failed(node.node_id, 'not_sent');
      return { kind: 'notSent' };
    } finally {
      this.deps.unseen.end(node.node_id, granted);
    }
  }

  /**
   * Cuts the queued call `tag` names through its node (node/acquireCuts.ts): the node ends it, or
   * says its grant is already on the way, which the call then reads and hands on or gives back. A
   * node that cannot say (unreachable, or it answers otherwise) has the call closed instead.
   */
  private cut(node: NodeRecord, tag: string, abort: () => void): void {
    const call = { method: 'POST', path: `/cluster/acquires/${tag}/cut`, headers: { [ACQUIRE_TAG_HEADER]: tag }, body: null };
    const closeInstead = (why: string): void => {
      logger.warn({ err: why, node: node.node_id }, 'a waiting acquire could not be cut through its node: its call is closed');
      abort();
    };
    this.deps.clients.send(node.address, call).then(
      async (answer) => {
        await answer.body.dump();
        if (answer.statusCode !== 200) closeInstead(`the node answered ${answer.statusCode}`);
      },
      (err: unknown) => closeInstead(errorMessage(err)),
    );
  }

  /** The client's request sent on to `node` (`tag`: the queued call's, to cut it by), its answer counted per node. */
  async send(node: NodeRecord, req: IncomingMessage, path: string, body: string | null, signal?: AbortSignal, tag: string | null = null): Promise<Dispatcher.ResponseData> {
    const headers = forwardedHeaders(req.headers);
    delete headers['content-length'];
    if (tag !== null) headers[ACQUIRE_TAG_HEADER] = tag;
    if (body !== null) headers['content-type'] = 'application/json';
    const startMs = performance.now();
    const answer = await this.deps.clients.send(node.address, { method: 'POST', path: req.url ?? path, headers, body, signal });
    this.deps.metrics.answered(node.node_id, answer.statusCode, startMs);
    return answer;
  }

  /** A session granted that nobody waits for any more: released on its node at once. */
  giveBack(read: ReadAnswer): void {
    for (const id of grantedIds(read.text)) {
      const call = { method: 'POST', path: `/session/${encodeURIComponent(id)}/release`, headers: {}, body: null };
      this.deps.clients.send(read.node.address, call).then(
        (answer) => answer.body.dump(),
        (err: unknown) => logger.warn({ err: errorMessage(err), node: read.node.node_id }, 'a session granted to an acquire that left was not released; the idle reclaim takes it'),
      );
    }
  }
}
