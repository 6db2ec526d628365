/**
 * The pool's record of leases by session_id: the live ones, and (bounded) the ended ones, so that
 * each call on an id gets the spec's answer: 404 never issued, 400 ended, 410 broken.
 */
import type { Lease } from './slot';
import { RetiredLeases, type RetiredWhy } from './retiredLeases';
import { SessionBrokenError, SessionNotFoundError, SessionNotInUseError } from '../common/errors';

const RETIRED_IDS_REMEMBERED = 100_000;

export class LeaseBook {
  private readonly live = new Map<string, Lease>();
  private readonly retired = new RetiredLeases(RETIRED_IDS_REMEMBERED);

  add(lease: Lease): void {
    this.live.set(lease.id, lease);
  }

  /** The live, unbroken lease of `id`, or the error its caller must see. */
  require(id: string): Lease {
    const lease = this.live.get(id);
    if (!lease) {
      const why = this.retired.why(id);
      if (why) throw new SessionNotInUseError(id, why === 'reclaimed' ? 'reclaimed after being idle' : 'already released');
      throw new SessionNotFoundError(id);
    }
    if (lease.brokenReason !== null) throw new SessionBrokenError(id, lease.brokenReason);
    return lease;
  }

  /** Ends the lease of `id` and returns it; null if it had already ended (release is idempotent). */
  end(id: string, why: RetiredWhy): Lease | null {
    const lease = this.live.get(id);
    if (!lease) {
      if (this.retired.has(id)) return null;
      throw new SessionNotFoundError(id);
    }
    this.live.delete(id);
    this.retired.add(id, why);
    return lease;
  }

  knows(id: string): boolean {
    return this.live.has(id) || this.retired.has(id);
  }

  anyExecuting(): boolean {
    for (const lease of this.live.values()) if (lease.executing) return true;
    return false;
  }

  /** Live leases with no call since `cutoffMs` and no command running. */
  idleSince(cutoffMs: number): Lease[] {
    return [...this.live.values()].filter((l) => !l.executing && l.lastActivityMs < cutoffMs);
  }
}
