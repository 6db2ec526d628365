/**
 * The reclaim rule: which live leases the pool takes back, and why.
 * @backend any
 */
import { Lease } from '../../src/core/pool/slot';
import { overdue } from '../../src/core/pool/leaseTtl';

const IDLE_MS = 1_000;

function leaseQuietFor(quietMs: number, nowMs: number, ttlMs: number | null = null): Lease {
  const lease = new Lease('s', null, '/w', nowMs - quietMs);
  lease.ttlMs = ttlMs;
  return lease;
}

describe('overdue', () => {
  const now = 1_000_000;

  it('takes back a lease quiet past the idle timeout, or past its own lease_ttl first', () => {
    expect(overdue(leaseQuietFor(IDLE_MS - 1, now), now, IDLE_MS)).toBeNull();
    expect(overdue(leaseQuietFor(IDLE_MS + 1, now), now, IDLE_MS)).toBe('idle_timeout');
    expect(overdue(leaseQuietFor(300, now, 200), now, IDLE_MS)).toBe('lease_ttl');
  });

  it('never takes a lease whose command runs', () => {
    const lease = leaseQuietFor(10 * IDLE_MS, now);
    lease.executing = true;
    expect(overdue(lease, now, IDLE_MS)).toBeNull();
  });

  it('never takes a lease taken out of the pool, however long quiet and whatever its ttl, and a call on it changes nothing', () => {
    const lease = leaseQuietFor(10 * IDLE_MS, now, 200);
    lease.takenOut = true;
    expect(overdue(lease, now, IDLE_MS)).toBeNull();
    // What every call on a lease does (execute, heartbeat, execd): the mark stays.
    lease.lastActivityMs = now - 5 * IDLE_MS;
    expect(lease.takenOut).toBe(true);
    expect(overdue(lease, now, IDLE_MS)).toBeNull();
  });
});
