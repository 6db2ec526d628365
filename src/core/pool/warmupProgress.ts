/**
 * Progress of the pool's first fill: how many slots of the target have a shell, how fast they come,
 * and how long the rest should take. /health shows it while it runs; a warm-up that lasts logs a line
 * every LOG_EVERY_MS (a small pool is warm before the first one and logs only its "pool warm" line).
 */
import { logger } from '../../common/logger';

const LOG_EVERY_MS = 2_000;
const MS_PER_SECOND = 1000;

/** /health's `warmup` object (snake case, as the pool API's fields). */
export interface WarmupSnapshot {
  target_sessions: number;
  /** Slots whose first shell answered. */
  ready_sessions: number;
  /** Slots whose first shell could not start (BROKEN: retried with backoff, not counted as ready). */
  failed_sessions: number;
  elapsed_seconds: number;
  /** Slots settled (ready or failed) per second so far; null before the first. */
  sessions_per_second: number | null;
  /** At that rate, until every slot has settled; null before the first. */
  seconds_left: number | null;
}

export class WarmupProgress {
  private ready = 0;
  private failed = 0;
  private readonly startedMs = performance.now();
  private readonly timer: NodeJS.Timeout;
  private finished = false;

  constructor(readonly targetSessions: number) {
    this.timer = setInterval(() => this.logProgress(), LOG_EVERY_MS);
    this.timer.unref();
  }

  /** A slot's first rebuild ended: `ready` when it has a shell. */
  settled(ready: boolean): void {
    if (ready) this.ready++;
    else this.failed++;
  }

  get running(): boolean {
    return !this.finished;
  }

  /** Every slot was tried once: logs the summary (time taken, rate, any that failed). */
  finish(): void {
    if (this.finished) return;
    clearInterval(this.timer);
    this.finished = true;
    const s = this.snapshot();
    const failed = s.failed_sessions > 0 ? `, ${s.failed_sessions} failed (retried in the background)` : '';
    logger.info(s, `pool warm: ${s.ready_sessions} of ${s.target_sessions} sessions ready in ${s.elapsed_seconds} s${failed}`);
  }

  snapshot(): WarmupSnapshot {
    const elapsedMs = performance.now() - this.startedMs;
    const settled = this.ready + this.failed;
    const perSecond = settled > 0 && elapsedMs > 0 ? (settled * MS_PER_SECOND) / elapsedMs : null;
    return {
      target_sessions: this.targetSessions,
      ready_sessions: this.ready,
      failed_sessions: this.failed,
      elapsed_seconds: round(elapsedMs / MS_PER_SECOND),
      sessions_per_second: perSecond === null ? null : round(perSecond),
      seconds_left: perSecond === null ? null : round(Math.max(0, this.targetSessions - settled) / perSecond),
    };
  }

  private logProgress(): void {
    const s = this.snapshot();
    const left = s.seconds_left === null ? '?' : `${Math.ceil(s.seconds_left)} s`;
    const rate = s.sessions_per_second === null ? '?' : s.sessions_per_second.toFixed(1);
    logger.info(s, `warming up: ${s.ready_sessions} of ${s.target_sessions} sessions ready (${rate}/s, ${left} left)`);
  }
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
