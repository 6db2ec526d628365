/** What the pool reports as it works; the metrics module implements it. The core imports no metrics library. */
export type AcquireOutcome = 'ok' | 'timeout' | 'aborted';
export type ExecuteOutcome = 'success' | 'failed' | 'timeout' | 'error';

export interface PoolObserver {
  acquireWaited(seconds: number, outcome: AcquireOutcome): void;
  executed(seconds: number, outcome: ExecuteOutcome): void;
  cleaned(seconds: number, ok: boolean): void;
  broken(reason: string): void;
  reclaimed(): void;
}

export const NOOP_OBSERVER: PoolObserver = {
  acquireWaited: () => undefined,
  executed: () => undefined,
  cleaned: () => undefined,
  broken: () => undefined,
  reclaimed: () => undefined,
};
