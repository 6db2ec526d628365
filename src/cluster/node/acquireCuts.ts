/**
 * How a gateway cuts an acquire that waits in a node's queue without losing a grant made at that
 * instant. Closing the call's connection is not enough: a node that granted the lease and wrote its
 * answer just before the close arrives counts the answer delivered (it reached the connection), while
 * the gateway, which cut the connection, never reads it, and the lease waits for the idle reclaim.
 *
 * So a gateway tags each acquire it may cut (`X-Broker-Acquire-Tag`, a random UUID) and cuts it by
 * asking the node, `POST /cluster/acquires/<tag>/cut` with the tag in the header as well. The node decides in one turn of its event loop:
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
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

export const ACQUIRE_TAG_HEADER = 'x-broker-acquire-tag';

const CUT_PATH = /^\/cluster\/acquires\/([0-9a-f-]{36})\/cut$/;

/** How long a tag is remembered once its call ended, or after a cut that came before its call. */
const TAG_MEMORY_MS = 120_000;

export class AcquireCuts {
  /** Tagged calls in progress, by tag. */
  private readonly open = new Map<string, ServerResponse>();
  /** Tags whose call ended with its answer written (epoch ms of the end). */
  private readonly answered = new Map<string, number>();
  /** Tags cut before their call arrived (epoch ms of the cut). */
  private readonly cutEarly = new Map<string, number>();

  /** `listener` with the cut route answered and tagged calls tracked. */
  wrap(listener: RequestListener): RequestListener {
    return (req, res) => {
      if (req.method === 'POST' && req.url?.startsWith('/cluster/acquires/')) {
        // A gateway's own cut names its tag in the header too, which gateways drop from the calls
        // they forward: a client cannot cut through a gateway (its call is any other call, a 404).
        const match = CUT_PATH.exec(req.url);
        if (match && req.headers[ACQUIRE_TAG_HEADER] === match[1]) return this.answerCut(match[1], req, res);
      }
      const tag = req.headers[ACQUIRE_TAG_HEADER];
      if (typeof tag === 'string' && !this.track(tag, res)) return;
      listener(req, res);
    };
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

  private answerCut(tag: string, req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    const body = JSON.stringify({ cut: this.cut(tag) });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
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
