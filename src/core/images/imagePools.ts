/**
 * Acquires by image (docs/images.md): an image a configured pool runs goes there; any other is
 * pulled once (imagePulls.ts) and served by a pool of that image made on demand (imagePool.ts),
 * which starts with the containers its first demand needs, grows one container at a time, and is
 * closed after its idle time, or sooner when the node's budget needs its room for another image
 * (the pool idle longest goes first). Every acquire by image says what it cost.
 */
import type { SessionPool } from '../pool/pool';
import type { SessionBackend } from '../ports/backend';
import type { PoolEntry, PoolRegistry } from '../pool/poolRegistry';
import { ImagePool } from './imagePool';
import type { ImagePulls } from './imagePulls';
import type { ImageAccess } from './imageAccess';
import { canonicalImage, parseImageRef, type ImageRef } from './imageRef';
import { imageStarting, imageStillPulling, nodeFull } from './imageErrors';
import { acquireDeadline } from '../pool/acquireWaits';
import { AbortedError, BackendError, BadRequestError, NotImplementedError, ShuttingDownError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';

/** A pool of `image` over a backend of its own, not started (the broker makes it: broker.ts). */
export type ImagePoolFactory = (image: string) => { pool: SessionPool; backend: SessionBackend };

export interface ImageLimits {
  sessionsPerContainer: number;
  maxContainersPerImage: number;
  poolIdleMs: number;
  nodeMaxContainers: number;
  nodeMaxSessions: number;
  /** The pools' own acquire timeout (BROKER_ACQUIRE_TIMEOUT): an acquire's pull counts against it. */
  acquireTimeoutMs: number;
}

/** Containers a new demand for an image could start on the node, and the limits of one image's pool. */
export interface ImageRoom {
  containers_free: number;
  sessions_per_container: number;
  max_containers_per_image: number;
}

export type ImageCostKind = 'warm' | 'started' | 'pulled';

/** What an acquire by image cost: where its session came from, and the whole wait. */
export interface ImageCost {
  kind: ImageCostKind;
  waitMs: number;
}

export interface ImageEvents {
  acquired(cost: ImageCost): void;
}

/** Where an acquire by image went, and what it cost. */
export interface Served<T> {
  pool: SessionPool;
  value: T;
  cost: ImageCost;
  /** The configured pool that runs the image, or null: its pool made on demand. */
  configured: PoolEntry | null;
}

/** How an acquire uses the pool it was given, `timeoutMs` what is left of its own. */
export type PoolUse<T> = (pool: SessionPool, timeoutMs: number) => Promise<T>;

export interface ImagePoolsDeps {
  configured: PoolRegistry;
  access: ImageAccess;
  /** Null where the backend runs no images (local): only the configured pools' images are served. */
  pulls: ImagePulls | null;
  make: ImagePoolFactory | null;
  limits: ImageLimits;
  events?: ImageEvents;
}

export class ImagePools {
  private readonly pools = new Map<string, ImagePool>();
  private readonly timer: NodeJS.Timeout;
  private closing = false;

  constructor(private readonly deps: ImagePoolsDeps) {
    const everyMs = Math.max(100, Math.min(5_000, deps.limits.poolIdleMs / 4));
    this.timer = setInterval(() => this.closeIdle(), everyMs);
    this.timer.unref();
  }

  /** Whether this node pulls images at all (a backend that runs them, and an allow-list). */
  get onDemand(): boolean {
    return this.deps.pulls !== null && this.deps.make !== null && this.deps.access.enabled;
  }

  get live(): readonly ImagePool[] {
    return [...this.pools.values()];
  }

  /** The configured pool that runs `ref` (the default one first), or null. */
  configuredFor(ref: ImageRef): PoolEntry | null {
    return this.deps.configured.entries.find((e) => canonicalImage(e.image) === ref.canonical) ?? null;
  }

  /** Images nothing may evict: a pool of them runs, an acquire waits for them, a configured pool runs them. */
  pinned(): Set<string> {
    const out = new Set<string>();
    for (const entry of this.deps.configured.entries) out.add(canonicalImage(entry.image) ?? entry.image);
    for (const p of this.pools.values()) out.add(p.image);
    for (const image of this.pendingCounts.keys()) out.add(image);
    return out;
  }

  /** The image pool that leased `sessionId`, or null. */
  owning(sessionId: string): SessionPool | null {
    for (const p of this.pools.values()) if (p.pool.knows(sessionId)) return p.pool;
    return null;
  }

  /**
   * Serves an acquire of `raw` (one session, a group, a lifecycle sandbox's): `sessions` is how many
   * it takes at once (a group's n), `spread` whether each needs a container of its own.
   */
  async serve<T>(raw: string, request: { acquireTimeoutMs?: number; signal?: AbortSignal; sessions?: number; spread?: boolean }, use: PoolUse<T>): Promise<Served<T>> {
    const startedMs = Date.now();
    const ref = parseImageRef(raw);
    const configured = this.configuredFor(ref);
    const { deadline, timeoutMs } = acquireDeadline(request.acquireTimeoutMs, this.deps.limits.acquireTimeoutMs);
    if (configured) {
      const value = await use(configured.pool, timeoutMs);
      return { pool: configured.pool, value, configured, cost: this.cost('warm', startedMs) };
    }
    const { pulls } = this.deps;
    if (!pulls || !this.deps.make) {
      const served = this.deps.configured.entries.map((e) => `'${e.image}'`).join(', ');
      throw new NotImplementedError(`image '${ref.canonical}' is not served: this backend runs no images of its own (only the configured pools' ${served})`);
    }
    this.deps.access.check(ref);
    if (this.closing) throw new ShuttingDownError();
    const sessions = request.sessions ?? 1;
    const containersNeeded = request.spread ? sessions : Math.ceil(sessions / this.deps.limits.sessionsPerContainer);
    if (containersNeeded > this.deps.limits.maxContainersPerImage) {
      throw new BadRequestError(`${sessions} sessions of one image need ${containersNeeded} containers; an image has at most ${this.deps.limits.maxContainersPerImage} (BROKER_IMAGE_MAX_CONTAINERS_PER_IMAGE)`);
    }
    const image = ref.canonical;
    const pending = this.pending(image);
    try {
      const pulled = await untilDeadline(pulls.ensure(ref, !this.pools.has(image)), deadline, request.signal, () => imageStillPulling(image, this.pullProgress(image)));
      const { entry, started } = await this.poolFor(image, containersNeeded, sessions, deadline, request.signal);
      try {
        const value = await use(entry.pool, Math.max(1, deadline - Date.now()));
        entry.uses += sessions;
        entry.lastActiveMs = Date.now();
        return { pool: entry.pool, value, configured: null, cost: this.cost(pulled ? 'pulled' : started ? 'started' : 'warm', startedMs) };
      } finally {
        entry.wanting -= sessions;
      }
    } finally {
      pending.done();
    }
  }

  /** Pins `image` (against eviction) while an acquire is on its way to a pool of it. */
  private readonly pendingCounts = new Map<string, number>();
  private pending(image: string): { done(): void } {
    this.pendingCounts.set(image, (this.pendingCounts.get(image) ?? 0) + 1);
    return {
      done: () => {
        const n = (this.pendingCounts.get(image) ?? 1) - 1;
        if (n <= 0) this.pendingCounts.delete(image);
        else this.pendingCounts.set(image, n);
      },
    };
  }

  /** How many acquires are on their way to each image (they pin it with the pools' own). */
  pendingByImage(): ReadonlyMap<string, number> {
    return this.pendingCounts;
  }

  private pullProgress(image: string): string {
    const f = this.deps.pulls?.flight(image);
    if (!f) return 'starting';
    const mib = (n: number): string => (n / 1024 ** 2).toFixed(1);
    return `${mib(f.bytesDone)} of ${mib(f.bytesTotal)} MiB after ${((Date.now() - f.startedAtMs) / 1000).toFixed(1)} s`;
  }

  private cost(kind: ImageCostKind, startedMs: number): ImageCost {
    const cost = { kind, waitMs: Date.now() - startedMs };
    this.deps.events?.acquired(cost);
    return cost;
  }

  /**
   * The image's pool, made (with `containersNeeded` containers) or grown for this demand: to the
   * containers it needs, and by the containers the sessions wanted and not yet leased need beyond
   * those free and on their way. `sessions` are counted as wanted from here until the caller took
   * them (it subtracts them). `started`: this acquire waited for a container.
   */
  async poolFor(image: string, containersNeeded: number, sessions: number, deadline: number, signal?: AbortSignal): Promise<{ entry: ImagePool; started: boolean }> {
    let entry = this.pools.get(image);
    let started = false;
    if (!entry) {
      entry = this.create(image, Math.max(1, containersNeeded));
      started = true;
    } else if (!entry.isReady) {
      started = true;
    }
    entry.wanting += sessions;
    try {
      await untilDeadline(entry.ready, deadline, signal, () => imageStarting(image));
      const wanted = Math.max(containersNeeded - entry.containers, entry.containersWanted());
      const room = Math.min(wanted, this.deps.limits.maxContainersPerImage - entry.containers);
      if (room > 0 && this.makeRoom(room, image)) {
        started = true;
        void this.grow(entry, room);
      } else if (containersNeeded > entry.containers) {
        throw nodeFull(image, `it needs ${containersNeeded} containers, has ${entry.containers}, and ${this.budgetText()}`);
      }
    } catch (err) {
      entry.wanting -= sessions;
      throw err;
    }
    return { entry, started };
  }

  private create(image: string, containers: number): ImagePool {
    if (!this.makeRoom(containers, image)) throw nodeFull(image, this.budgetText());
    const { pool, backend } = this.deps.make!(image);
    const entry = new ImagePool(image, pool, backend, Date.now());
    this.pools.set(image, entry);
    entry.ready = (async () => {
      await pool.start();
      const failed = await this.grow(entry, containers);
      if (failed !== null) throw new BackendError(`the first container of '${image}' did not start: ${failed}`);
      entry.isReady = true;
    })();
    // A pool whose first container cannot start is no pool: closed at once, every waiter told why.
    entry.ready.catch((err: unknown) => {
      logger.warn({ image, err: errorMessage(err) }, 'an image pool could not start: closed');
      this.drop(entry);
    });
    return entry;
  }

  private async grow(entry: ImagePool, containers: number): Promise<string | null> {
    try {
      return await entry.pool.grow(containers);
    } catch (err) {
      return errorMessage(err);
    }
  }

  /** Containers and sessions of every pool on the node (the configured ones' included). */
  nodeUse(): { containers: number; sessions: number } {
    let containers = 0;
    let sessions = 0;
    for (const e of this.deps.configured.entries) {
      containers += e.pool.containers.length;
      sessions += e.pool.targetSessions;
    }
    for (const p of this.pools.values()) {
      containers += p.containers;
      sessions += p.sessions;
    }
    return { containers, sessions };
  }

  /**
   * What the node could still give image pools (its cluster record: where a gateway places an
   * image the node does not run yet): containers and sessions free in the node budget, the idle
   * image pools' counted as free (makeRoom closes them for a new demand), and the per-pool limits.
   */
  room(): ImageRoom {
    const { nodeMaxContainers, nodeMaxSessions, sessionsPerContainer, maxContainersPerImage } = this.deps.limits;
    const use = this.nodeUse();
    let containers = nodeMaxContainers - use.containers;
    let sessions = nodeMaxSessions - use.sessions;
    for (const p of this.pools.values()) {
      if (!p.isReady || p.busy) continue;
      containers += p.containers;
      sessions += p.sessions;
    }
    const free = this.onDemand ? Math.max(0, Math.min(containers, Math.floor(sessions / sessionsPerContainer))) : 0;
    return { containers_free: free, sessions_per_container: sessionsPerContainer, max_containers_per_image: maxContainersPerImage };
  }

  private budgetText(): string {
    const { containers, sessions } = this.nodeUse();
    const { nodeMaxContainers, nodeMaxSessions } = this.deps.limits;
    return `the node runs ${containers} of ${nodeMaxContainers} containers and ${sessions} of ${nodeMaxSessions} sessions (BROKER_NODE_MAX_*), and no image pool is idle`;
  }

  /**
   * Room for `containers` more of `forImage`: the image pools idle longest (no lease, no waiter) are
   * closed until they fit. False when they do not, even with every idle pool closed.
   */
  private makeRoom(containers: number, forImage: string): boolean {
    const { nodeMaxContainers, nodeMaxSessions, sessionsPerContainer } = this.deps.limits;
    const fits = (): boolean => {
      const use = this.nodeUse();
      return use.containers + containers <= nodeMaxContainers && use.sessions + containers * sessionsPerContainer <= nodeMaxSessions;
    };
    while (!fits()) {
      const idle = [...this.pools.values()].filter((p) => p.image !== forImage && p.isReady && !p.busy).sort((a, b) => a.lastActiveMs - b.lastActiveMs);
      if (idle.length === 0) return false;
      logger.info({ image: idle[0].image, for: forImage }, 'closing the image pool idle longest: the node budget needs its room');
      this.drop(idle[0]);
    }
    return true;
  }

  /** Closes it and forgets it at once (its containers count no more; a new acquire makes a new pool). */
  private drop(entry: ImagePool): void {
    if (entry.closed) return;
    entry.closed = true;
    if (this.pools.get(entry.image) === entry) this.pools.delete(entry.image);
    entry.pool.close(0).catch((err: unknown) => logger.warn({ image: entry.image, err: errorMessage(err) }, 'closing an image pool failed'));
  }

  /** The idle rule: a pool without a lease or a waiter for the idle time goes to zero containers. */
  private closeIdle(): void {
    const now = Date.now();
    for (const p of this.pools.values()) {
      if (!p.isReady) continue;
      if (p.busy) p.lastActiveMs = now;
      else if (now - p.lastActiveMs >= this.deps.limits.poolIdleMs) {
        logger.info({ image: p.image }, 'image pool idle: closed');
        this.drop(p);
      }
    }
  }

  async close(graceMs: number): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.pool.close(graceMs).catch(() => undefined)));
  }
}

/** `work`'s result before `deadline`, else `late()`'s error; the client leaving ends the wait (not the work). */
function untilDeadline<T>(work: Promise<T>, deadline: number, signal: AbortSignal | undefined, late: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(late()), Math.max(0, deadline - Date.now()));
    const onAbort = (): void => reject(new AbortedError('acquire'));
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
  });
}
