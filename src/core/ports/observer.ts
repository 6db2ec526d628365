/**
 * What the pool reports as it works; the metrics module implements it. The core imports no metrics
 * library. Durations are milliseconds, as everywhere in the broker; metrics converts at its boundary.
 */
import type { ReclaimReason } from '../pool/leaseTtl';

export type AcquireOutcome = 'ok' | 'timeout' | 'aborted';
export type ExecuteOutcome = 'success' | 'failed' | 'timeout' | 'error';

export interface PoolObserver {
  acquireWaited(waitedMs: number, outcome: AcquireOutcome): void;
  executed(durationMs: number, outcome: ExecuteOutcome): void;
  /** From release to the slot AVAILABLE again (or to the cleanup's failure). */
  cleaned(durationMs: number, ok: boolean): void;
  /** After a release: the shell was made pristine in place (true) or had to be closed and reopened. */
  recycled(inPlace: boolean): void;
  broken(reason: string): void;
  reclaimed(reason: ReclaimReason): void;
  /** A container failed (dead, stopped, paused, silent, or never started) and is being replaced. */
  containerReplaced(reason: string): void;
}

export const NOOP_OBSERVER: PoolObserver = {
  acquireWaited: () => undefined,
  executed: () => undefined,
  cleaned: () => undefined,
  recycled: () => undefined,
  broken: () => undefined,
  reclaimed: () => undefined,
  containerReplaced: () => undefined,
};
