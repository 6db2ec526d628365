/**
 * The broker's pools by name: the default one (BROKER_CONTAINERS, BROKER_IMAGE; the pool API as
 * its clients know it) and the named ones of BROKER_POOLS, each a SessionPool of its own over a backend of its own
 * (its image, its environment). An acquire names a pool or gets the default; every later call on a
 * session id is routed to the pool that leased it. For the per-sandbox APIs it explains an id that
 * no live sandbox has (SandboxDirectory): a lease that ended, broke, or was never issued.
 */
import type { SessionPool } from './pool';
import type { SessionBackend } from '../ports/backend';
import { brokerError, SessionNotFoundError } from '../../common/errors';

export const DEFAULT_POOL = 'default';

/** One pool and what it was configured with. */
export interface PoolEntry {
  readonly name: string;
  /** The image its containers run (on the local backend, a name only). */
  readonly image: string;
  readonly pool: SessionPool;
  /** Its own backend (lifecycle pause and resume act on its containers); absent: the broker's. */
  readonly backend?: SessionBackend;
  readonly sessionsPerContainer: number;
  /** Whether each lease gets a container of its own, fresh (BROKER_POOLS' fresh_container). */
  readonly freshContainer: boolean;
}

export class UnknownPoolError extends brokerError('invalid', 'unknown_pool', (name: string, known: readonly string[]) => `Unknown pool '${name}': this broker has ${known.map((n) => `'${n}'`).join(', ')} (BROKER_POOLS)`) {}

export class PoolRegistry {
  private readonly byName = new Map<string, PoolEntry>();
  /** The pools made on demand per image (core/images/imagePools.ts), asked after the configured ones. */
  private onDemand: ((sessionId: string) => SessionPool | null) | null = null;

  constructor(
    readonly main: PoolEntry,
    named: readonly PoolEntry[] = [],
  ) {
    for (const entry of [main, ...named]) this.byName.set(entry.name, entry);
  }

  /** Routes the leases of the pools made per image, which this registry does not list. */
  attachOnDemand(owning: (sessionId: string) => SessionPool | null): void {
    this.onDemand = owning;
  }

  get entries(): readonly PoolEntry[] {
    return [...this.byName.values()];
  }

  get named(): readonly PoolEntry[] {
    return this.entries.filter((e) => e !== this.main);
  }

  /** The pool an acquire names (`undefined`: the default one), or a 400 that lists the pools there are. */
  pool(name?: string): SessionPool {
    if (name === undefined) return this.main.pool;
    const entry = this.byName.get(name);
    if (!entry) throw new UnknownPoolError(name, [...this.byName.keys()]);
    return entry.pool;
  }

  /**
   * The pool that leased `sessionId` (live or ended), else the default one, which answers for ids
   * nobody issued. The default is asked first: it holds the pool API's hot path.
   */
  owning(sessionId: string): SessionPool {
    if ((this.byName.size === 1 && this.onDemand === null) || this.main.pool.knows(sessionId)) return this.main.pool;
    for (const entry of this.byName.values()) if (entry.pool.knows(sessionId)) return entry.pool;
    return this.onDemand?.(sessionId) ?? this.main.pool;
  }

  /**
   * The error a per-sandbox API's caller sees for an id no live sandbox has: the pool API's own (404
   * never issued, 400 ended, 410 broken), from the pool that leased it, else the default one.
   */
  explain(sessionId: string): Error {
    try {
      this.owning(sessionId).site(sessionId);
    } catch (err) {
      return err as Error;
    }
    // Live, yet not in the directory: a lease of a pool made without it (none of the broker's).
    return new SessionNotFoundError(sessionId);
  }

  /**
   * The pool that serves lifecycle sandboxes of `image`: one of whole containers (one session each,
   * fresh per lease), so that a sandbox is isolated as a container is. Null when none is configured.
   */
  wholeContainersOf(image: string): PoolEntry | null {
    for (const entry of this.byName.values()) {
      if (entry.image === image && entry.sessionsPerContainer === 1 && entry.freshContainer) return entry;
    }
    return null;
  }

  async start(): Promise<void> {
    await Promise.all(this.entries.map((e) => e.pool.start()));
  }

  /** The named pools first: the default one's backend owns the working root theirs live in (local). */
  async close(graceMs: number): Promise<void> {
    await Promise.all(this.named.map((e) => e.pool.close(graceMs)));
    await this.main.pool.close(graceMs);
  }
}
