/**
 * The pool's record of leases by session_id: the live ones, and (bounded) the ended ones, so that
 * each call on an id gets the pool API's answer: 404 never issued, 400 ended, 410 broken.
 */
import type { Lease } from './slot';
import { RetiredLeases, type RetiredWhy } from './retiredLeases';
import { overdue, reclaimedBecause, type ReclaimReason } from './leaseTtl';
import { SessionBrokenError, SessionNotFoundError, SessionNotInUseError } from '../../common/errors';

const RETIRED_IDS_REMEMBERED = 100_000;

export class LeaseBook {
  private readonly live = new Map<string, Lease>();
  private readonly retired = new RetiredLeases(RETIRED_IDS_REMEMBERED);

  add(lease: Lease): void {
    this.live.set(lease.id, lease);
  }

  /** The live, unbroken lease of `id` (or broken too, with `evenBroken`), or the error its caller must see. */
  require(id: string, evenBroken = false): Lease {
    const lease = this.live.get(id);
    if (!lease) {
      const retired = this.retired.get(id);
      if (!retired) throw new SessionNotFoundError(id);
      const err = new SessionNotInUseError(id, retired.detail);
      if (retired.why !== 'released') err.fields = { reclaimed: retired.why };
      throw err;
    }
    if (lease.brokenReason !== null && !evenBroken) throw new SessionBrokenError(id, lease.brokenReason);
    return lease;
  }

  /** Every live lease, broken ones too (until their holder releases them). */
  list(): Lease[] {
    return [...this.live.values()];
  }

  /** Ends the lease of `id` and returns it; null if it had already ended (release is idempotent). */
  end(id: string, why: RetiredWhy): Lease | null {
    const lease = this.live.get(id);
    if (!lease) {
      if (this.retired.has(id)) return null;
      throw new SessionNotFoundError(id);
    }
    this.live.delete(id);
    this.retired.add(id, why, why === 'released' ? 'already released' : reclaimedBecause(why, lease.ttlMs));
    return lease;
  }

  knows(id: string): boolean {
    return this.live.has(id) || this.retired.has(id);
  }

  anyExecuting(): boolean {
    for (const lease of this.live.values()) if (lease.executing) return true;
    return false;
  }

  /** Live leases overdue at `nowMs` (leaseTtl.ts), with why. */
  overdue(nowMs: number, idleTimeoutMs: number): { lease: Lease; reason: ReclaimReason }[] {
    const out: { lease: Lease; reason: ReclaimReason }[] = [];
    for (const lease of this.live.values()) {
      const reason = overdue(lease, nowMs, idleTimeoutMs);
      if (reason) out.push({ lease, reason });
    }
    return out;
  }

  get liveCount(): number {
    return this.live.size;
  }
}
