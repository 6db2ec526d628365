/**
 * One frame of the dashboard: the whole picture at one instant, as plain JSON (snake_case, times in
 * ms or s as each name says). Built once a second for every viewer at once (dashboardFeed.ts), and
 * for GET /admin/state.
 */
import type { SessionPool } from '../pool/pool';
import type { Lease } from '../pool/slot';
import { SessionState } from '../pool/states';
import type { PoolActivity } from './poolActivity';
import type { Replacement } from './containerWatch';
import { round } from './secondSeries';
import { RECLAIM_REASONS } from '../pool/leaseTtl';

/** Leases listed in a frame (oldest first); the count says how many there are in all. */
export const LEASES_LISTED = 500;
/** The window of the execute and acquire percentiles. */
const PERCENTILE_SECONDS = 10;

/** One letter per slot state, so a pool of thousands of sessions stays a short string per container. */
const STATE_LETTER: Record<SessionState, string> = { available: 'A', in_use: 'U', cleaning: 'C', broken: 'B' };

export interface WorkspaceSummary {
  workspace_id: string;
  workdir: string;
  running_job_id: string | null;
}

/** A sandbox of any API that has them (execd state of a pool session, lifecycle sandboxes, groups, tasks). */
export interface SandboxSummary {
  kind: string;
  id: string;
  /** A line about it (its state, its pool, what runs). */
  detail: string;
}

/** A pool by its name (the broker's PoolRegistry entries). */
export interface NamedPool {
  readonly name: string;
  readonly pool: SessionPool;
}

export interface DashboardSources {
  /** Every pool, the default one first. */
  pools: () => readonly NamedPool[];
  activity: PoolActivity;
  workspaces?: () => WorkspaceSummary[];
  sandboxes?: () => SandboxSummary[];
  /** The node's images on demand (held, pulling, with their pools' sessions); absent where it pulls none. */
  images?: () => ImageSummaryLine[];
}

/** One image as the dashboard lists it. */
export interface ImageSummaryLine {
  image: string;
  state: string;
  containers: number;
  warm_sessions: number;
  leased_sessions: number;
  disk_bytes: number | null;
}

function leaseView(pool: string, lease: Lease, nowMs: number): Record<string, unknown> {
  const slot = lease.slot;
  // A slot taken out (a workspace's, a lifecycle sandbox's) is never idle-reclaimed: its owner gives it back.
  const takenOut = lease.takenOut;
  return {
    session_id: lease.id,
    pool,
    holder: takenOut ? 'taken out' : 'client',
    container: slot?.container.index ?? null,
    slot: slot?.slotId ?? null,
    age_s: round((nowMs - lease.acquiredAtMs) / 1000),
    idle_s: takenOut || lease.executing ? null : round(Math.max(0, nowMs - lease.lastActivityMs) / 1000),
    executing: lease.executing,
    lease_ttl_s: lease.ttlMs === null ? null : lease.ttlMs / 1000,
    broken: lease.brokenReason,
  };
}

function sum<K extends string>(rows: readonly Record<K, number>[], keys: readonly K[]): Record<K, number> {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const row of rows) for (const k of keys) out[k] += row[k] ?? 0;
  return out;
}

const STATES = ['available', 'in_use', 'cleaning', 'broken', 'total'] as const;

export function dashboardFrame(sources: DashboardSources, replacements: readonly Replacement[], nowMs = Date.now()): Record<string, unknown> {
  const { activity } = sources;
  const pools = sources.pools();
  const perPool = pools.map(({ name, pool }) => ({ name, ...pool.states.snapshot(), target: pool.targetSessions, waiting: pool.waiting }));
  const leases = pools
    .flatMap(({ name, pool }) => pool.liveLeases().map((lease) => ({ name, lease })))
    .sort((a, b) => a.lease.acquiredAtMs - b.lease.acquiredAtMs);
  const executes = activity.executes.series(nowMs);
  const [p50, p99] = activity.executes.percentiles([0.5, 0.99], PERCENTILE_SECONDS, nowMs);
  const waits = activity.acquires.series(nowMs);
  const [waitP50, waitP99] = activity.acquires.percentiles([0.5, 0.99], PERCENTILE_SECONDS, nowMs);
  const reclaimed = pools.map(({ pool }) => pool.stats().reclaimed);
  return {
    at: new Date(nowMs).toISOString(),
    pool: { ...sum(perPool, STATES), target: sum(perPool, ['target']).target, closing: pools.some(({ pool }) => pool.isClosing) },
    pools: perPool,
    containers: pools.flatMap(({ name, pool }) =>
      pool.containers.map((c) => ({
        pool: name,
        index: c.index,
        healthy: c.healthy,
        replacing: c.replacing,
        reason: c.healthy ? null : c.unhealthyReason,
        slots: c.slots.map((s) => STATE_LETTER[s.state]).join(''),
      })),
    ),
    queue: {
      waiting: sum(perPool, ['waiting']).waiting,
      wait_p50_ms: waitP50,
      wait_p99_ms: waitP99,
      acquires_per_second: waits.counts,
      timeouts_per_second: waits.flagged,
      wait_max_ms: waits.maxMs,
    },
    execute: {
      total: activity.executesTotal,
      p50_ms: p50,
      p99_ms: p99,
      per_second: executes.counts,
      failed_per_second: executes.flagged,
    },
    reclaimed: sum(reclaimed, RECLAIM_REASONS),
    leases: { count: leases.length, items: leases.slice(0, LEASES_LISTED).map(({ name, lease }) => leaseView(name, lease, nowMs)) },
    errors: activity.errors.map((e) => ({ at: new Date(e.atMs).toISOString(), kind: e.kind, message: e.message })),
    replaced: replacements.map((r) => ({ at: new Date(r.atMs).toISOString(), pool: r.pool, container: r.container, reason: r.reason })),
    workspaces: sources.workspaces?.() ?? [],
    sandboxes: sources.sandboxes?.() ?? [],
    images: sources.images?.() ?? [],
  };
}
