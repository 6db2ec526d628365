/**
 * Prometheus metrics (prom-client) on a registry of our own. Implements the pool's observer;
 * session-state gauges are read from the pool at scrape time, so they can never drift. The observer
 * reports milliseconds; the histograms are in seconds (Prometheus' base unit), converted here only.
 */
import client, { Registry } from 'prom-client';
import type { AcquireOutcome, ExecuteOutcome, PoolObserver } from '../core/ports/observer';
import type { SessionPool } from '../core/pool/pool';
import type { PoolRegistry } from '../core/pool/poolRegistry';
import { SessionState } from '../core/pool/states';
import { RECLAIM_REASONS, type ReclaimReason } from '../core/pool/leaseTtl';
import { registerWorkspaceViewers, type WorkspaceViewerCounts } from './workspaceMetrics';
import { ImageMetrics } from './imageMetrics';

/** Executes recorded but not yet handed to prom-client: flushed at every scrape, or when this many wait. */
const MAX_PENDING_EXECUTES = 4096;

const MS_PER_SECOND = 1000;
/**
 * Seconds, as Prometheus histograms are. An execute of a short command takes 0.1-0.4 ms inside the
 * broker, so the buckets start at 100 us: with a first bound of 0.5 ms every quick command fell into
 * one bucket and a p50 or p99 under a millisecond could not be told apart.
 */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export class BrokerMetrics implements PoolObserver {
  readonly registry = new Registry();
  private readonly acquireWait: client.Histogram<'outcome'>;
  private readonly executeDuration: client.Histogram<'outcome'>;
  private readonly executes: client.Counter<'outcome'>;
  private readonly timeouts: client.Counter;
  private readonly cleanups: client.Counter<'result'>;
  private readonly cleanupDuration: client.Histogram;
  private readonly recycles: client.Counter<'result'>;
  private readonly broke: client.Counter;
  private readonly reclaims: client.Counter<'reason'>;
  private readonly replacedContainers: client.Counter;
  /** The workspace fanouts' counts of viewers that fell behind. */
  readonly workspaceViewers: WorkspaceViewerCounts = registerWorkspaceViewers(this.registry);
  /** Images on demand: pulls, disk, evictions, acquires by image (imageMetrics.ts). */
  readonly images = new ImageMetrics(this.registry);
  private pool: SessionPool | null = null;
  private pools: PoolRegistry | null = null;
  /**
   * Executes seen since the last flush. prom-client's observe() with a label costs ~5 us (label
   * validation, hashing, closures); on the execute path that is ~1% of a `true` round trip, so the
   * path only stores two numbers and the scrape (or a full buffer) pays.
   */
  private readonly pendingMs = new Float64Array(MAX_PENDING_EXECUTES);
  private readonly pendingOutcomes: ExecuteOutcome[] = new Array(MAX_PENDING_EXECUTES);
  private pendingCount = 0;

  constructor() {
    client.collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    // prom-client calls collect() with the metric as `this`; the pool is reached through a closure.
    const pool = (): SessionPool | null => this.pool;
    new client.Gauge({
      name: 'broker_sessions',
      help: 'Sessions in the pool by state',
      labelNames: ['state'],
      registers,
      collect() {
        const p = pool();
        if (!p) return;
        for (const state of Object.values(SessionState)) this.set({ state }, p.states.count(state));
      },
    });
    const pools = (): PoolRegistry | null => this.pools;
    new client.Gauge({
      name: 'broker_pool_sessions',
      help: 'Sessions by pool (default and BROKER_POOLS) and state',
      labelNames: ['pool', 'state'],
      registers,
      collect() {
        for (const entry of pools()?.entries ?? []) {
          for (const state of Object.values(SessionState)) this.set({ pool: entry.name, state }, entry.pool.states.count(state));
        }
      },
    });
    new client.Gauge({
      name: 'broker_acquire_waiting',
      help: 'Acquire requests waiting for a free session',
      registers,
      collect() {
        this.set(pool()?.waiting ?? 0);
      },
    });
    new client.Gauge({
      name: 'broker_containers',
      help: 'Containers by health',
      labelNames: ['health'],
      registers,
      collect() {
        const h = pool()?.health();
        if (!h) return;
        this.set({ health: 'healthy' }, h.healthyContainers);
        this.set({ health: 'unhealthy' }, h.unhealthyContainers);
      },
    });
    this.acquireWait = new client.Histogram({
      name: 'broker_acquire_wait_seconds',
      help: 'Time an acquire waited for a free session',
      labelNames: ['outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const flush = (): void => this.flushExecutes();
    this.executeDuration = new client.Histogram({
      name: 'broker_execute_duration_seconds',
      help: 'Execute duration, from request to result',
      labelNames: ['outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
      collect: flush,
    });
    this.executes = new client.Counter({ name: 'broker_executes_total', help: 'Executes by outcome', labelNames: ['outcome'], registers, collect: flush });
    this.timeouts = new client.Counter({ name: 'broker_execute_timeouts_total', help: 'Commands killed at their timeout', registers, collect: flush });
    this.cleanups = new client.Counter({ name: 'broker_cleanups_total', help: 'Session cleanups after release', labelNames: ['result'], registers });
    this.cleanupDuration = new client.Histogram({
      name: 'broker_cleanup_duration_seconds',
      help: 'Time from release to the slot being AVAILABLE again',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.recycles = new client.Counter({
      name: 'broker_shell_recycles_total',
      help: 'Released shells made pristine in place (result=in_place) or closed and reopened (result=reopened)',
      labelNames: ['result'],
      registers,
    });
    this.broke = new client.Counter({ name: 'broker_sessions_broken_total', help: 'Sessions that went BROKEN', registers });
    this.reclaims = new client.Counter({
      name: 'broker_sessions_reclaimed_total',
      help: 'Leases reclaimed without a release, by reason (idle_timeout, lease_ttl)',
      labelNames: ['reason'],
      registers,
    });
    // Both series from the start, at 0: a rate() over a series that appears late misses its first step.
    for (const reason of RECLAIM_REASONS) this.reclaims.inc({ reason }, 0);
    this.replacedContainers = new client.Counter({
      name: 'broker_containers_replaced_total',
      // One per attempt: a container whose start keeps failing counts at every retry (each health pass).
      help: 'Container replacements begun after a failure (died, stopped, paused, went silent, or its start failed and is retried)',
      registers,
    });
  }

  attach(pool: SessionPool): void {
    this.pool = pool;
  }

  /** Every pool, for the per-pool gauge (the default one alone keeps broker_sessions as it was). */
  attachPools(pools: PoolRegistry): void {
    this.pools = pools;
  }

  acquireWaited(waitedMs: number, outcome: AcquireOutcome): void {
    this.acquireWait.observe({ outcome }, waitedMs / MS_PER_SECOND);
  }

  executed(durationMs: number, outcome: ExecuteOutcome): void {
    if (this.pendingCount === MAX_PENDING_EXECUTES) this.flushExecutes();
    this.pendingMs[this.pendingCount] = durationMs;
    this.pendingOutcomes[this.pendingCount++] = outcome;
  }

  private flushExecutes(): void {
    const n = this.pendingCount;
    this.pendingCount = 0;
    if (n === 0) return;
    // The counters take one inc per outcome: prom-client's inc costs as much as an observe.
    const counts: Partial<Record<ExecuteOutcome, number>> = {};
    for (let i = 0; i < n; i++) {
      const outcome = this.pendingOutcomes[i];
      this.executeDuration.observe({ outcome }, this.pendingMs[i] / MS_PER_SECOND);
      counts[outcome] = (counts[outcome] ?? 0) + 1;
    }
    for (const [outcome, count] of Object.entries(counts) as [ExecuteOutcome, number][]) {
      this.executes.inc({ outcome }, count);
      if (outcome === 'timeout') this.timeouts.inc(count);
    }
  }

  cleaned(durationMs: number, ok: boolean): void {
    this.cleanups.inc({ result: ok ? 'ok' : 'failed' });
    if (ok) this.cleanupDuration.observe(durationMs / MS_PER_SECOND);
  }

  recycled(inPlace: boolean): void {
    this.recycles.inc({ result: inPlace ? 'in_place' : 'reopened' });
  }

  broken(): void {
    this.broke.inc();
  }

  reclaimed(reason: ReclaimReason): void {
    this.reclaims.inc({ reason });
  }

  containerReplaced(): void {
    this.replacedContainers.inc();
  }
}
