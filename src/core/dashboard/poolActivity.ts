/**
 * The pool's recent work as the dashboard shows it, heard as it happens (a PoolObserver beside the
 * metrics, observerTee.ts): executes and acquire waits per second for the last minute, and the last
 * errors (broken sessions, failed executes, acquire timeouts, reclaims, failed cleanups).
 */
import type { AcquireOutcome, ExecuteOutcome, PoolObserver } from '../ports/observer';
import type { ReclaimReason } from '../pool/leaseTtl';
import { SecondSeries } from './secondSeries';

const ERRORS_KEPT = 50;

export type ActivityErrorKind = 'session_broken' | 'execute_error' | 'acquire_timeout' | 'reclaimed' | 'cleanup_failed' | 'container_replaced';

export interface ActivityError {
  atMs: number;
  kind: ActivityErrorKind;
  message: string;
}

export class PoolActivity implements Partial<PoolObserver> {
  readonly executes = new SecondSeries();
  readonly acquires = new SecondSeries();
  private readonly errorRing: ActivityError[] = [];
  executesTotal = 0;

  executed(durationMs: number, outcome: ExecuteOutcome): void {
    this.executesTotal++;
    this.executes.record(durationMs, outcome === 'error' || outcome === 'timeout');
    if (outcome === 'error') this.error('execute_error', `an execute failed after ${Math.round(durationMs)} ms (its session broke or ended)`);
  }

  acquireWaited(waitedMs: number, outcome: AcquireOutcome): void {
    this.acquires.record(waitedMs, outcome === 'timeout');
    if (outcome === 'timeout') this.error('acquire_timeout', `an acquire waited ${Math.round(waitedMs)} ms and got no session (503)`);
  }

  broken(reason: string): void {
    this.error('session_broken', reason);
  }

  reclaimed(reason: ReclaimReason): void {
    this.error('reclaimed', `a lease was reclaimed (${reason})`);
  }

  cleaned(durationMs: number, ok: boolean): void {
    if (!ok) this.error('cleanup_failed', `a released session's cleanup failed after ${Math.round(durationMs)} ms`);
  }

  error(kind: ActivityErrorKind, message: string, atMs = Date.now()): void {
    this.errorRing.push({ atMs, kind, message });
    if (this.errorRing.length > ERRORS_KEPT) this.errorRing.shift();
  }

  /** Newest first. */
  get errors(): readonly ActivityError[] {
    return [...this.errorRing].reverse();
  }
}
