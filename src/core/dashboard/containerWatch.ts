/**
 * Notices each container replacement by looking at the fleet's entries (their `replaced` count), so
 * the fleet needs no hook of the dashboard's. Looked at once a second by the dashboard feed, viewers
 * or not, so a replacement is listed later too.
 */
import type { ContainerEntry } from '../pool/slot';

const REPLACEMENTS_KEPT = 50;

export interface Replacement {
  atMs: number;
  pool: string;
  container: number;
  reason: string;
}

export class ContainerWatch {
  /** `pool/index` -> replacements seen. */
  private readonly seen = new Map<string, number>();
  private readonly ring: Replacement[] = [];

  /** Returns the replacements first seen in this look (one per container and look, however many it had). */
  look(pool: string, containers: readonly ContainerEntry[], nowMs = Date.now()): Replacement[] {
    const found: Replacement[] = [];
    for (const c of containers) {
      const key = `${pool}/${c.index}`;
      if (c.replaced.count > (this.seen.get(key) ?? 0)) found.push({ atMs: nowMs, pool, container: c.index, reason: c.replaced.lastReason });
      this.seen.set(key, c.replaced.count);
    }
    this.ring.push(...found);
    if (this.ring.length > REPLACEMENTS_KEPT) this.ring.splice(0, this.ring.length - REPLACEMENTS_KEPT);
    return found;
  }

  /** Newest first. */
  get replacements(): readonly Replacement[] {
    return [...this.ring].reverse();
  }
}
