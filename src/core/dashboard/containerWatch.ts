/**
 * Notices each container replacement by looking at the fleet's entries (their `replaced` count), so
 * the fleet needs no hook of the dashboard's. Looked at once a second by the dashboard feed, viewers
 * or not, so a replacement is listed later too.
 */
import type { ContainerEntry } from '../slot';

const REPLACEMENTS_KEPT = 50;

export interface Replacement {
  atMs: number;
  container: number;
  reason: string;
}

export class ContainerWatch {
  private readonly seen = new Map<number, number>();
  private readonly ring: Replacement[] = [];

  /** Returns the replacements first seen in this look (one per container and look, however many it had). */
  look(containers: readonly ContainerEntry[], nowMs = Date.now()): Replacement[] {
    const found: Replacement[] = [];
    for (const c of containers) {
      if (c.replaced.count > (this.seen.get(c.index) ?? 0)) found.push({ atMs: nowMs, container: c.index, reason: c.replaced.lastReason });
      this.seen.set(c.index, c.replaced.count);
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
