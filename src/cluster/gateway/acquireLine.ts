/**
 * A gateway's waiting acquires, in arrival order, and who serves them. Each acquire (a ticket) has
 * one worker: a call to a node's acquire that is moved from node to node (gatewayAcquire.ts) and
 * that waits in the node's own FIFO queue when the node is full. Acquires of one kind (the same
 * path and body but for `acquire_timeout`, no `request_id`) are interchangeable: a session a node
 * grants to one serves any other. So a worker's grant goes to the OLDEST waiting ticket of its
 * kind, and the ticket it was working for takes over that oldest ticket's worker (its place in
 * another node's queue). Within a gateway, acquires of a kind are thus served in arrival order,
 * whichever node frees first, and no acquire loses its place in a queue to another.
 *
 * A ticket that leaves (its client went away, or its acquire_timeout passed) takes its worker with
 * it: the worker's call is cut through the node, which cancels that waiting acquire, or says its
 * grant is on the way (node/acquireCuts.ts), and that grant is then handed on or given back.
 * A worker granted a session that no ticket of its kind waits for any more gives it back at once.
 */
import type { Dispatcher } from 'undici';
import type { NodeRecord } from '../clusterStore';

/** A node's answer read whole, and the node that gave it. */
export interface ReadAnswer {
  statusCode: number;
  headers: Dispatcher.ResponseData['headers'];
  text: string;
  node: NodeRecord;
}

/** What a ticket's client is told: a granted session; a node's last word as it came; the pool's 503; an error of the gateway's. */
export type Outcome = { kind: 'granted'; read: ReadAnswer } | { kind: 'answer'; read: ReadAnswer } | { kind: 'exhausted'; retryAfter: string } | { kind: 'failed'; err: unknown };

/** Cuts a worker's call through its node; `abort` closes the call instead, when the node cannot say. */
export type CallCutter = (abort: () => void) => void;

/** A call to nodes on behalf of one ticket at a time. */
export class AcquireWorker {
  owner: AcquireTicket | null;
  /** Nodes tried for its owner (a new owner starts afresh). */
  tried = new Set<string>();
  private controller = new AbortController();
  /** How its call is cut, while it may be: not once the node's answer came, nor a call to a node that looked free. */
  private cutter: CallCutter | null = null;

  constructor(owner: AcquireTicket) {
    this.owner = owner;
  }

  /**
   * The signal of the worker's next call to a node. `cutter`: how to cut a call that waits in a full
   * node's queue (through the node, so that a grant made as the cut arrives is still read and handed
   * on or given back, gatewayAcquire.ts). null: a call to a node that looked free, left to end (it is
   * short): its grant is handed on or given back.
   */
  nextCall(cutter: CallCutter | null): AbortSignal {
    this.cutter = cutter;
    if (this.controller.signal.aborted) this.controller = new AbortController();
    return this.controller.signal;
  }

  /** The node's answer came: it is read and handed on, never cut. */
  answered(): void {
    this.cutter = null;
  }

  /** Nobody waits for this worker any more: a call waiting in a node's queue is cut (the node cancels it). */
  stop(): void {
    this.owner = null;
    const cutter = this.cutter;
    this.cutter = null;
    if (cutter) {
      const controller = this.controller;
      cutter(() => controller.abort());
    }
  }
}

let arrivals = 0;

export class AcquireTicket {
  settled = false;
  /** Its place in the gateway's arrival order. */
  readonly arrival = ++arrivals;
  readonly worker: { current: AcquireWorker };
  /** A second, short call to a node the watch showed free while its worker waits elsewhere. */
  probe: AcquireWorker | null = null;
  /** The Retry-After of the last node that answered it 503 pool_exhausted. */
  retryAfter: string | null = null;
  private resolveOutcome: (outcome: Outcome) => void = () => undefined;
  readonly outcome = new Promise<Outcome>((resolve) => (this.resolveOutcome = resolve));
  private timer: NodeJS.Timeout | null = null;

  /** `kind`: the key of the interchangeable acquires it is one of; null when it is alone of its kind (a request_id). */
  constructor(
    readonly kind: string | null,
    readonly pool: string,
    /** Epoch ms. */
    readonly deadline: number,
  ) {
    this.worker = { current: new AcquireWorker(this) };
  }

  /** Answers at the deadline if nothing did before (a worker may be in a call that outlives it). */
  expireAt(onExpiry: () => void): void {
    this.timer = setTimeout(onExpiry, Math.max(0, this.deadline - Date.now()));
    this.timer.unref();
  }

  settle(outcome: Outcome): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.timer) clearTimeout(this.timer);
    this.resolveOutcome(outcome);
    return true;
  }
}

export class AcquireLine {
  private readonly kinds = new Map<string, AcquireTicket[]>();

  join(ticket: AcquireTicket): void {
    if (ticket.kind === null) return;
    const line = this.kinds.get(ticket.kind);
    if (line) line.push(ticket);
    else this.kinds.set(ticket.kind, [ticket]);
  }

  /** Waiting acquires of every kind. */
  get length(): number {
    let n = 0;
    for (const line of this.kinds.values()) n += line.length;
    return n;
  }

  /** The waiting acquires of `pool` without a probe, oldest first. */
  unprobed(pool: string): AcquireTicket[] {
    const found: AcquireTicket[] = [];
    for (const line of this.kinds.values()) for (const t of line) if (t.pool === pool && t.probe === null) found.push(t);
    return found.sort((a, b) => a.arrival - b.arrival);
  }

  /** The pools acquires wait for. */
  pools(): Set<string> {
    const pools = new Set<string>();
    for (const line of this.kinds.values()) for (const t of line) pools.add(t.pool);
    return pools;
  }

  /** `ticket` is answered `outcome` and leaves, its workers stopped (the one that answered is done anyway). */
  leave(ticket: AcquireTicket, outcome: Outcome): void {
    if (!ticket.settle(outcome)) return;
    this.remove(ticket);
    ticket.worker.current.stop();
    ticket.probe?.stop();
    ticket.probe = null;
  }

  /**
   * `worker` was granted a session: it goes to the oldest ticket of its owner's kind (the owner's own
   * worker takes the served ticket's place), or to its owner alone when it has no kind. False when
   * nobody waits for it: the caller gives the session back.
   */
  grant(worker: AcquireWorker, kind: string | null, read: ReadAnswer): boolean {
    const owner = worker.owner;
    const served = kind === null ? (owner && !owner.settled ? owner : null) : this.kinds.get(kind)?.[0];
    if (!served) return false;
    served.settle({ kind: 'granted', read });
    this.remove(served);
    worker.owner = null;
    if (owner?.probe === worker) owner.probe = null;
    const spares = [served.worker.current, served.probe].filter((w): w is AcquireWorker => w !== null && w !== worker);
    served.probe = null;
    // The worker was its owner's only one, and the owner still waits: it takes a spare, and its place in a node's queue.
    const takeOver = owner !== null && !owner.settled && owner.worker.current === worker ? spares.shift() : undefined;
    if (takeOver && owner) {
      takeOver.owner = owner;
      takeOver.tried = new Set();
      owner.worker.current = takeOver;
    }
    for (const spare of spares) spare.stop();
    return true;
  }

  private remove(ticket: AcquireTicket): void {
    if (ticket.kind === null) return;
    const line = this.kinds.get(ticket.kind);
    if (!line) return;
    const at = line.indexOf(ticket);
    if (at >= 0) line.splice(at, 1);
    if (line.length === 0) this.kinds.delete(ticket.kind);
  }
}
