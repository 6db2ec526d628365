/**
 * Why a lease is taken back from its holder without a release, and when. Two clocks, one path (the
 * pool's reclaim, the idle timeout's): a lease is overdue when it had no call for the pool's idle
 * timeout, or for its own `lease_ttl` when the acquire asked for one (shorter, so a rollout worker
 * that vanished frees its session in seconds). Every call on the lease renews both (and
 * `POST /session/{id}/heartbeat` does nothing else); a command that runs keeps its lease however long.
 */
import type { Lease } from './slot';

/** `operator`: taken back by hand (the dashboard's reclaim), its holder told so. */
export type ReclaimReason = 'idle_timeout' | 'lease_ttl' | 'operator';
export const RECLAIM_REASONS: readonly ReclaimReason[] = ['idle_timeout', 'lease_ttl', 'operator'];

/** Why `lease` is overdue at `nowMs`, or null when it is not (a command is running on it, or its owner took it out of the pool). */
export function overdue(lease: Lease, nowMs: number, idleTimeoutMs: number): ReclaimReason | null {
  if (lease.executing || lease.takenOut) return null;
  const quietMs = nowMs - lease.lastActivityMs;
  if (lease.ttlMs !== null && quietMs > lease.ttlMs) return 'lease_ttl';
  if (quietMs > idleTimeoutMs) return 'idle_timeout';
  return null;
}

/** What the old holder of a reclaimed lease is told (the detail of its 400 session_not_in_use). */
export function reclaimedBecause(reason: ReclaimReason, ttlMs: number | null): string {
  if (reason === 'operator') return 'reclaimed by an operator';
  if (reason === 'lease_ttl') return `reclaimed: its lease_ttl${ttlMs === null ? '' : ` of ${ttlMs / 1000} s`} passed without a call or heartbeat`;
  return 'reclaimed after being idle';
}

/** Leases reclaimed so far, by reason (for /health and /metrics). */
export class ReclaimCounts {
  private readonly counts: Record<ReclaimReason, number> = { idle_timeout: 0, lease_ttl: 0, operator: 0 };

  add(reason: ReclaimReason): void {
    this.counts[reason]++;
  }

  snapshot(): Record<ReclaimReason, number> {
    return { ...this.counts };
  }
}
