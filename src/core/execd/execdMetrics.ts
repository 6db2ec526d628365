/**
 * execd's /metrics and /metrics/watch: a sandbox's CPU and memory use from its backend's meter (the
 * container's own cgroup on Docker; the session's own processes locally), in OpenSandbox
 * execd's Metrics shape. CPU use is a rate, so it takes two samples: a snapshot waits SNAPSHOT_WINDOW_MS
 * between them, a watch compares each sample with the one a second before.
 */
import { NotSupportedError } from '../../common/errors';
import { setTimeout as sleep } from 'node:timers/promises';
import { delay } from '../../common/delay';
import type { ResourceSample } from '../ports/backend';
import type { SandboxHandle } from '../sandbox/sandboxHandle';

/** The yaml's Metrics, plus `scope`: what was measured (a client that does not know the field ignores it). */
export interface MetricsReport {
  cpu_count: number;
  /** Of the sandbox's own CPUs: 100 is all of `cpu_count` busy. */
  cpu_used_pct: number;
  mem_total_mib: number;
  mem_used_mib: number;
  /** Unix milliseconds. */
  timestamp: number;
  scope: string;
}

/** Between a snapshot's two CPU samples: long enough to see a busy CPU, short enough for a request. */
const SNAPSHOT_WINDOW_MS = 100;
const MIB = 1024 * 1024;

interface Timed {
  sample: ResourceSample;
  atMs: number;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

export function report(before: Timed, after: Timed): MetricsReport {
  const { sample } = after;
  const wallUs = Math.max(1, (after.atMs - before.atMs) * 1000);
  // A process sum (local) drops when a process exits: no negative use.
  const usedUs = Math.max(0, sample.cpuUsageUs - before.sample.cpuUsageUs);
  const pct = (usedUs / wallUs / Math.max(sample.cpuCount, 1e-9)) * 100;
  return {
    cpu_count: round2(sample.cpuCount),
    cpu_used_pct: round2(Math.min(100, pct)),
    mem_total_mib: round2(sample.memoryLimitBytes / MIB),
    mem_used_mib: round2(sample.memoryUsedBytes / MIB),
    timestamp: after.atMs,
    scope: sample.scope,
  };
}

export class ExecdMetrics {

  async snapshot(handle: SandboxHandle): Promise<MetricsReport> {
    const first = await this.sample(handle);
    await delay(SNAPSHOT_WINDOW_MS);
    return report(first, await this.sample(handle));
  }

  /** A report now (a snapshot), then one every `intervalMs` until `signal` aborts. */
  async watch(handle: SandboxHandle, signal: AbortSignal, emit: (report: MetricsReport) => Promise<void>, intervalMs = 1000): Promise<void> {
    let previous = await this.sample(handle);
    await delay(SNAPSHOT_WINDOW_MS);
    while (!signal.aborted) {
      const next = await this.sample(handle);
      await emit(report(previous, next));
      previous = next;
      await sleep(Math.max(0, previous.atMs + intervalMs - Date.now()), undefined, { signal, ref: false }).catch(() => undefined);
    }
  }

  private async sample(handle: SandboxHandle): Promise<Timed> {
    // The sandbox's own backend's meter: only it knows the sandbox's container.
    const { meter, kind } = handle.backend;
    if (!meter) throw new NotSupportedError(`the ${kind} backend cannot measure a sandbox`);
    const sample = await meter.sample(handle.container, handle.slotId);
    return { sample, atMs: Date.now() };
  }
}
