/**
 * How a gateway cuts an acquire that waits in a node's queue without losing a grant made at that
 * instant. Closing the call's connection is not enough: a node that granted the lease and wrote its
 * answer just before the close arrives counts the answer delivered (it reached the connection), while
 * the gateway, which cut the connection, never reads it, and the lease waits for the idle reclaim.
 *
 * So a gateway tags each acquire it may cut (`X-Broker-Acquire-Tag`, a random UUID) and cuts it by
 * asking the node, `POST /cluster/acquires/<tag>/cut` with the tag in the header as well (a route of
 * the node's seam: api/cluster/clusterContract.ts). The node decides in one turn of its event loop:
 * - the answer's head is not written: the call is ended here (its response destroyed, as when a
 *   client leaves). The pool drops the waiter, or, if the grant is being written right now, the
 *   lease goes back at once (the answer was not delivered). Answered `{"cut":true}`.
 * - the answer's head is written: the grant is on its way to the gateway, which reads it and hands
 *   it on or releases it. Answered `{"cut":false}`.
 * - the tag is unknown: the acquire has not arrived yet (the cut came first, on another connection)
 *   or was answered long ago. An unanswered tag is remembered for a while, and an acquire arriving
 *   with it is ended at once. Answered `{"cut":true}`.
 *
 * Only calls that carry a tag are tracked: standalone clients and other calls pay nothing.
 */
import type { RequestListener, ServerResponse } from 'node:http';
import type { Router } from '../../http/router';
import { apiErrors, served } from '../../http/contract';
import { RouteNotFoundError } from '../../http/seam';
import { CLUSTER_CONTRACT } from '../../api/cluster/clusterContract';

export const ACQUIRE_TAG_HEADER = 'x-broker-acquire-tag';

const TAG = /^[0-9a-f-]{36}$/;
/** Where every cut's path starts: a cut is no call to track. */
const CUTS_PREFIX = '/cluster/acquires/';

/** How long a tag is remembered once its call ended, or after a cut that came before its call. */
const TAG_MEMORY_MS = 120_000;

export class AcquireCuts {
  /** Tagged calls in progress, by tag. */
  private readonly open = new Map<string, ServerResponse>();
  /** Tags whose call ended with its answer written (epoch ms of the end). */
  private readonly answered = new Map<string, number>();
  /** Tags cut before their call arrived (epoch ms of the cut). */
  private readonly cutEarly = new Map<string, number>();

  /** `listener` with tagged calls tracked (a cut names its tag too, and is none of them). */
  wrap(listener: RequestListener): RequestListener {
    return (req, res) => {
      const tag = req.headers[ACQUIRE_TAG_HEADER];
      if (typeof tag === 'string' && !req.url?.startsWith(CUTS_PREFIX) && !this.track(tag, res)) return;
      listener(req, res);
    };
  }

  /** The cut route, served by the node's seam. */
  router(): Router {
    const route = served(CLUSTER_CONTRACT.routes.cutAcquire, ({ req, res, params }) => {
      // A gateway's own cut names its tag in the header too, which gateways drop from the calls they
      // forward (and a gateway serves this route to no client): anything else is a call to no route.
      if (!TAG.test(params.tag) || req.headers[ACQUIRE_TAG_HEADER] !== params.tag) throw new RouteNotFoundError(req.method ?? 'POST', (req.url ?? '').split('?')[0]);
      req.resume();
      const body = JSON.stringify({ cut: this.cut(params.tag) });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    });
    return { name: 'acquire cuts', ...apiErrors(CLUSTER_CONTRACT), routes: [route] };
  }

  /** Whether the call goes on: one whose tag was cut before it arrived ends here. */
  private track(tag: string, res: ServerResponse): boolean {
    this.prune(Date.now());
    if (this.cutEarly.delete(tag)) {
      res.destroy();
      return false;
    }
    this.open.set(tag, res);
    res.once('close', () => {
      if (this.open.get(tag) === res) this.open.delete(tag);
      if (res.headersSent) this.answered.set(tag, Date.now());
    });
    return true;
  }

  /** Cuts the call `tag` names unless its answer is on its way (module comment). */
  cut(tag: string): boolean {
    const res = this.open.get(tag);
    if (res) {
      if (res.headersSent) return false;
      this.open.delete(tag);
      res.destroy();
      return true;
    }
    if (this.answered.has(tag)) return false;
    this.prune(Date.now());
    this.cutEarly.set(tag, Date.now());
    return true;
  }

  private prune(nowMs: number): void {
    for (const memory of [this.answered, this.cutEarly]) {
      for (const [tag, atMs] of memory) {
        // Maps iterate in insertion order: the first one young enough ends the sweep.
        if (nowMs - atMs < TAG_MEMORY_MS) break;
        memory.delete(tag);
      }
    }
  }
}
