/**
 * The acquires' waits, for honest backpressure: each wait is timed (for /metrics, and a ring of the
 * last WINDOW for /health's p50 wait), and a 503 after the acquire timeout says how long the queue
 * is and when to come back (Retry-After: the median recent wait, whole seconds, at least 1). The
 * median is computed when asked (a /health or a 503), never on the acquire path.
 */
import type { PoolObserver } from '../ports/observer';
import { PoolExhaustedError } from '../../common/errors';

const WINDOW = 1024;

export class AcquireWaits {
  private readonly ring = new Float64Array(WINDOW);
  private count = 0;

  constructor(private readonly observer: PoolObserver) {}

  /** `taking`'s result, its wait recorded. */
  async time<T>(taking: Promise<T>): Promise<T> {
    const startMs = performance.now();
    try {
      const got = await taking;
      this.record(performance.now() - startMs, 'ok');
      return got;
    } catch (err) {
      this.record(performance.now() - startMs, err instanceof PoolExhaustedError ? 'timeout' : 'aborted');
      throw err;
    }
  }

  /** The median of the recent waits in ms, or null before the first. */
  p50Ms(): number | null {
    const n = Math.min(this.count, WINDOW);
    if (n === 0) return null;
    const sorted = this.ring.slice(0, n).sort();
    return sorted[Math.floor((n - 1) / 2)];
  }

  /** The 503 of an acquire that waited `timeoutMs` in vain, with `queueLength` still waiting. */
  exhausted(timeoutMs: number, queueLength: number): PoolExhaustedError {
    const err = new PoolExhaustedError(timeoutMs);
    err.fields = { queue_length: queueLength };
    err.retryAfterSeconds = Math.max(1, Math.ceil((this.p50Ms() ?? 1000) / 1000));
    return err;
  }

  private record(waitedMs: number, outcome: 'ok' | 'timeout' | 'aborted'): void {
    this.ring[this.count++ % WINDOW] = waitedMs;
    this.observer.acquireWaited(waitedMs, outcome);
  }
}

/** An acquire's deadline (epoch ms) and timeout: its own `acquireTimeoutMs`, capped by the pool's. */
export function acquireDeadline(requestTimeoutMs: number | undefined, poolTimeoutMs: number): { deadline: number; timeoutMs: number } {
  const timeoutMs = Math.min(requestTimeoutMs ?? Infinity, poolTimeoutMs);
  return { deadline: Date.now() + timeoutMs, timeoutMs };
}
