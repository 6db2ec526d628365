/**
 * Retry-safe calls: a client names a call with a `request_id`, and a retry of it (after a dropped
 * connection or a proxy timeout) gets the first call's result, or waits for it while it still runs;
 * the work never runs twice. The same id with other arguments is a conflict (409): a client bug, not
 * a retry.
 *
 * What is remembered: a call in flight, always; a call that succeeded, for `windowMs` after it ended,
 * and at most `maxEntries` of them (the oldest forgotten first). A call that failed is forgotten at
 * once: a failure here leased nothing and ran nothing that can run again (an execute that failed
 * left its lease ended or broken, so a retry gets the same error without running), and forgetting it
 * lets a client retry a 503 with the same id.
 */
import { brokerError } from '../../common/errors';

export class RequestIdConflictError extends brokerError('busy', 'request_id_conflict', (requestId: string, what: string) => `request_id '${requestId}' was already used for a different ${what}; use a new id for a new request`) {}

interface Entry {
  fingerprint: string;
  promise: Promise<unknown>;
  /** When it succeeded (epoch ms); null while in flight. */
  doneAtMs: number | null;
}

export interface RequestIdOptions {
  windowMs: number;
  maxEntries: number;
}

export class RequestIds {
  /** In insertion order: the oldest first, for eviction. */
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly options: RequestIdOptions) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * `work`'s result, run once per `key` within the window. `fingerprint` says what the call asked
   * for; `what` names it in a conflict's message.
   */
  run<T>(key: string, fingerprint: string, what: string, work: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const known = this.entries.get(key);
    if (known && (known.doneAtMs === null || now - known.doneAtMs < this.options.windowMs)) {
      if (known.fingerprint !== fingerprint) return Promise.reject(new RequestIdConflictError(key.slice(key.indexOf(':') + 1), what));
      return known.promise as Promise<T>;
    }
    if (known) this.entries.delete(key);
    this.evict(now);
    const entry: Entry = { fingerprint, promise: Promise.resolve(), doneAtMs: null };
    entry.promise = work().then(
      (value) => {
        entry.doneAtMs = Date.now();
        return value;
      },
      (err: unknown) => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
        throw err;
      },
    );
    this.entries.set(key, entry);
    return entry.promise as Promise<T>;
  }

  /** Forgets expired entries from the oldest on, and the oldest finished ones beyond the bound. */
  private evict(now: number): void {
    for (const [key, entry] of this.entries) {
      if (entry.doneAtMs === null) continue; // in flight: its retry must find it
      const expired = now - entry.doneAtMs >= this.options.windowMs;
      if (!expired && this.entries.size < this.options.maxEntries) break;
      this.entries.delete(key);
    }
  }
}
