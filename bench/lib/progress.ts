/**
 * One progress line at the foot of a terminal, redrawn in place a few times a second; log lines
 * printed through it land above it. Off when stdout is not a terminal or CI is set (CI=true): a CI log
 * or a file gets the log lines only, no carriage returns and no redraws.
 */
const REDRAW_EVERY_MS = 250;
const ERASE_LINE = '\r\x1b[2K';

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): boolean;
}

export function progressWanted(stream: ProgressStream, env: NodeJS.ProcessEnv): boolean {
  const ci = Boolean(env.CI) && env.CI !== 'false';
  return Boolean(stream.isTTY) && !ci;
}

export class ProgressLine {
  private text: () => string = () => '';
  private timer: NodeJS.Timeout | null = null;
  private shown = false;

  constructor(
    private readonly out: ProgressStream = process.stdout,
    readonly enabled = progressWanted(out, process.env),
  ) {}

  /** Shows `text` (called again at every redraw, so it may count up) until the next set() or stop(). */
  set(text: () => string): void {
    if (!this.enabled) return;
    this.text = text;
    if (!this.timer) {
      this.timer = setInterval(() => this.draw(), REDRAW_EVERY_MS);
      this.timer.unref();
    }
    this.draw();
  }

  /** Prints a log line (always, terminal or not), above the progress line. */
  log(line: string): void {
    this.erase();
    this.out.write(`${line}\n`);
    if (this.timer) this.draw();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.erase();
  }

  private draw(): void {
    const width = Math.max(20, (this.out.columns ?? 80) - 1);
    this.out.write(ERASE_LINE + this.text().slice(0, width));
    this.shown = true;
  }

  private erase(): void {
    if (!this.shown) return;
    this.out.write(ERASE_LINE);
    this.shown = false;
  }
}

/** `[#####-----]` for a fraction done (clamped to 0..1). */
export function bar(fraction: number, width = 20): string {
  const filled = Math.round(Math.min(1, Math.max(0, fraction)) * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
}

/** Seconds as m:ss. */
export function clock(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** The broker's /health `warmup` object (src/core/pool/warmupProgress.ts), as a progress text. */
export function warmupText(name: string, warmup: { ready_sessions: number; target_sessions: number; sessions_per_second: number | null; seconds_left: number | null }): string {
  const rate = warmup.sessions_per_second === null ? '' : `, ${warmup.sessions_per_second.toFixed(0)}/s`;
  const left = warmup.seconds_left === null ? '' : `, ${clock(warmup.seconds_left)} left`;
  return `${name}: warming up ${bar(warmup.ready_sessions / warmup.target_sessions)} ${warmup.ready_sessions} of ${warmup.target_sessions} sessions${rate}${left}`;
}
