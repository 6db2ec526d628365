/**
 * One image's pool made on demand: a SessionPool of shared containers over a backend of that image,
 * with what the node's policy reads of it (docs/images.md, Growth and room): its containers and
 * sessions, whether it needs one more container, and since when nobody has used it.
 */
import type { SessionPool } from '../pool/pool';
import type { SessionBackend } from '../ports/backend';
import { SessionState } from '../pool/states';

export class ImagePool {
  /** The last time it had a lease or a waiting acquire (its idle time counts from it). */
  lastActiveMs: number;
  /** Sessions wanted by acquires on their way to a lease of it (they pin the image and the pool). */
  wanting = 0;
  /** Settles once its first containers started (rejects when the first of them could not). */
  ready: Promise<void> = Promise.resolve();
  isReady = false;
  closed = false;
  /** Leases it gave (the most used images are the ones a cluster record names). */
  uses = 0;

  constructor(
    readonly image: string,
    readonly pool: SessionPool,
    readonly backend: SessionBackend,
    nowMs: number,
  ) {
    this.lastActiveMs = nowMs;
  }

  get containers(): number {
    return this.pool.containers.length;
  }

  get sessions(): number {
    return this.pool.targetSessions;
  }

  get warmSessions(): number {
    return this.pool.states.count(SessionState.AVAILABLE);
  }

  get leasedSessions(): number {
    return this.pool.states.count(SessionState.IN_USE);
  }

  /** In use now: a lease, an acquire in its queue, or one on its way to it. */
  get busy(): boolean {
    return this.wanting > 0 || this.leasedSessions > 0 || this.pool.waiting > 0;
  }

  /**
   * Sessions that will be free soon without a new container: being cleaned after a release, or in a
   * container that is starting (its slots are counted once their first shell was tried).
   */
  get sessionsOnTheWay(): number {
    const counts = this.pool.states.snapshot();
    return counts.cleaning + Math.max(0, this.sessions - counts.total);
  }

  /**
   * The growth rule: the containers that the sessions wanted and not yet leased need beyond those
   * free and on their way (rounded up), none when those suffice.
   */
  containersWanted(): number {
    const unmet = this.wanting - this.warmSessions - this.sessionsOnTheWay;
    return unmet > 0 ? Math.ceil(unmet / this.pool.sessionsPerContainer) : 0;
  }
}
