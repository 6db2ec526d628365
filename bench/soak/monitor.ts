/**
 * Samples the broker while the soak runs: VmRSS and open fds from /proc (readable even when the
 * broker is too busy to answer), /health, and every few samples /metrics (V8 heap, event-loop lag).
 */
import fs from 'node:fs';
import type { BrokerProcess } from '../lib/brokerProcess';
import { metricValue } from '../lib/metricsText';
import { nowMs } from '../lib/stats';
import { runnableTasks } from '../lib/cpuPressure';
import type { healthReport } from '../../src/api/pool/healthRoutes';

/** GET /health's body, as the broker writes it. */
export type Health = ReturnType<typeof healthReport>;

export interface Sample {
  /** Seconds since the load started (negative before it). */
  tS: number;
  rssBytes: number;
  fds: number;
  health: Health | null;
  healthMs: number;
  /** Tasks running or waiting for a CPU on the whole machine (/proc/loadavg). */
  runnable?: number;
  heapUsedBytes?: number;
  eventLoopLagP99Ms?: number;
}

const METRICS_EVERY_SAMPLES = 5;

export function openFds(pid: number): number {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/** Open fds by kind (socket, pipe, anon_inode:[eventpoll], file): which kind grew, if any did. */
export function fdKinds(pid: number): Record<string, number> {
  const kinds: Record<string, number> = {};
  try {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      let target = 'gone';
      try {
        target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        /* closed while we looked */
      }
      const kind = target.startsWith('/') ? 'file' : target.replace(/:\[?\d+\]?$/, '');
      kinds[kind] = (kinds[kind] ?? 0) + 1;
    }
  } catch {
    /* the broker exited */
  }
  return kinds;
}

export class Monitor {
  readonly samples: Sample[] = [];
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  private count = 0;

  constructor(
    private readonly broker: BrokerProcess,
    private readonly loadStartMs: () => number,
  ) {}

  start(everyMs: number): void {
    this.timer = setInterval(() => {
      if (this.busy) return; // a slow /health: skip a tick rather than pile up
      this.busy = true;
      void this.sample()
        .then((s) => this.samples.push(s))
        .finally(() => (this.busy = false));
    }, everyMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async sample(): Promise<Sample> {
    const t0 = nowMs();
    const tS = (t0 - this.loadStartMs()) / 1000;
    const { rssBytes } = this.broker.procMemory();
    const fds = openFds(this.broker.pid);
    const runnable = runnableTasks() ?? undefined;
    const health = (await this.broker.health().catch(() => null)) as Health | null;
    const s: Sample = { tS, rssBytes, fds, runnable, health, healthMs: nowMs() - t0 };
    if (this.count++ % METRICS_EVERY_SAMPLES === 0) {
      const text = await this.broker.metrics().catch(() => '');
      s.heapUsedBytes = metricValue(text, 'nodejs_heap_size_used_bytes');
      s.eventLoopLagP99Ms = metricValue(text, 'nodejs_eventloop_lag_p99_seconds') * 1000;
    }
    return s;
  }
}

function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  return v.length ? v[Math.floor((v.length - 1) / 2)] : NaN;
}

export interface MemoryVerdict {
  rssIdleWarmBytes: number;
  rssMedianSecondThirdBytes: number;
  rssMedianLastThirdBytes: number;
  rssPeakBytes: number;
  growthBytes: number;
  boundBytes: number;
  flat: boolean;
  heapMedianSecondThirdBytes: number;
  heapMedianLastThirdBytes: number;
}

/**
 * The first third of the load is warm-up (V8 grows its heap, undici/http buffers reach their working
 * size); the median RSS of the last third may exceed the second third's by at most `boundBytes`.
 * Medians, not means: one flood answer in flight (2 MiB of JSON, copied a few times) moves a single
 * sample by tens of MB.
 */
export function memoryVerdict(samples: Sample[], loadS: number, idleWarmRss: number, boundBytes: number): MemoryVerdict {
  const during = samples.filter((s) => s.tS >= 0 && s.tS <= loadS);
  const second = during.filter((s) => s.tS >= loadS / 3 && s.tS < (2 * loadS) / 3);
  const last = during.filter((s) => s.tS >= (2 * loadS) / 3);
  const heap = (xs: Sample[]): number[] => xs.map((s) => s.heapUsedBytes).filter((h): h is number => h !== undefined && !Number.isNaN(h));
  const m2 = median(second.map((s) => s.rssBytes));
  const m3 = median(last.map((s) => s.rssBytes));
  return {
    rssIdleWarmBytes: idleWarmRss,
    rssMedianSecondThirdBytes: m2,
    rssMedianLastThirdBytes: m3,
    rssPeakBytes: Math.max(...during.map((s) => s.rssBytes)),
    growthBytes: m3 - m2,
    boundBytes,
    flat: m3 - m2 <= boundBytes,
    heapMedianSecondThirdBytes: median(heap(second)),
    heapMedianLastThirdBytes: median(heap(last)),
  };
}
