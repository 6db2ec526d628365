/** The end-of-run judgements that read the broker's state: the settled pool, reclaims, memory, health. */
import type { BrokerProcess } from '../lib/brokerProcess';
import { nowMs, sleep } from '../lib/stats';
import type { Health, Sample } from './monitor';
import type { SoakPlan } from './plan';
import type { ReclaimWatch } from './reclaimWatch';
import type { Check, SoakResults } from './report';
import type { Ending } from './ending';
import type { MemoryVerdict } from './monitor';
import type { TallySummary } from './tally';

/** The outcome of an acquire whose client gave up before the answer (episode.ts). */
export const GAVE_UP_OUTCOME = 'acquire: the client gave up (disconnected) before the answer';

/** Slack on top of the broker's own bounds (idle timeout + sweep) on a loaded 2-core machine. */
export const SETTLE_SLACK_MS = 8_000;
/** A BROKEN slot is rebuilt with a backoff of at most 30 s (pool.ts): two of those, and some. */
const SETTLE_BOUND_MS = 90_000;

/** Waits until /health shows every configured session AVAILABLE, nothing in use, cleaning or broken. */
export async function settle(broker: BrokerProcess, plan: SoakPlan, log: (l: string) => void): Promise<{ ok: boolean; ms: number; detail: string }> {
  const total = plan.containers * plan.perContainer;
  const t0 = nowMs();
  let last: Health | null = null;
  while (nowMs() - t0 < SETTLE_BOUND_MS) {
    last = (await broker.health().catch(() => null)) as Health | null;
    if (last && last.status === 'healthy' && last.total_sessions === total && last.available_sessions === total && last.broken_sessions === 0) {
      const ms = nowMs() - t0;
      log(`pool settled in ${(ms / 1000).toFixed(1)} s: ${total} of ${total} AVAILABLE`);
      return { ok: true, ms, detail: `${total}/${total} AVAILABLE, healthy, ${(ms / 1000).toFixed(1)} s after the load` };
    }
    await sleep(500);
  }
  return { ok: false, ms: nowMs() - t0, detail: `not settled within ${SETTLE_BOUND_MS / 1000} s; last /health ${JSON.stringify(last)}` };
}

/**
 * RSS may grow by at most 10% of the idle warm RSS, and at least 16 MB, from the second third of the
 * load to the last. Why: at a steady load V8's heap and the allocator's arenas have reached their
 * working size by then, and what remains is sawtooth (one 1 MiB-capped flood answer is ~2-6 MB while
 * it is built and sent). A leak of 1 KB per episode at ~40 episodes/s over a 2-minute third is ~5 MB
 * and would NOT be caught: the bound catches leaks of several KB per episode, or of whole buffers.
 */
export function memoryBoundBytes(idleWarmRss: number): number {
  return Math.max(16e6, 0.1 * idleWarmRss);
}

/**
 * A counter's total over its series: the unlabelled one, or the sum of its labelled ones (the reclaim
 * counter is split by reason: idle_timeout, lease_ttl, operator). NaN when /metrics had none.
 */
export function counterTotal(byLabel: Record<string, number> | undefined): number {
  const values = Object.entries(byLabel ?? {});
  if (values.length === 0) return NaN;
  const whole = byLabel?.[''];
  return whole ?? values.reduce((sum, [, v]) => sum + v, 0);
}

/**
 * Every abandoned lease answered "reclaimed after being idle", and the broker's reclaim counter agrees:
 * at least the abandoned ones, at most those plus acquires the client gave up on while the answer was
 * already on its way (then nobody knows the id, and the idle reclaim is what gives it back).
 */
export function reclaimCheck(reclaims: ReclaimWatch, reclaimedTotal: number, acquireGaveUp: number): Check {
  const counted = reclaimedTotal >= reclaims.abandoned && reclaimedTotal <= reclaims.abandoned + acquireGaveUp;
  return {
    name: 'abandoned leases reclaimed',
    pass: reclaims.verified === reclaims.abandoned && counted,
    detail: `${reclaims.abandoned} abandoned, ${reclaims.verified} answered 'reclaimed'; broker_sessions_reclaimed_total ${reclaimedTotal} (allowed ${reclaims.abandoned}..${reclaims.abandoned + acquireGaveUp})`,
  };
}

export function healthFigures(samples: Sample[]): SoakResults['health'] {
  const hs = samples.map((s) => s.health).filter((h): h is Health => h !== null);
  return {
    samples: samples.length,
    minAvailable: Math.min(...hs.map((h) => h.available_sessions)),
    maxBroken: Math.max(0, ...hs.map((h) => h.broken_sessions)),
    maxUnhealthyContainers: Math.max(0, ...hs.map((h) => h.unhealthy_containers)),
    notHealthySamples: samples.length - hs.filter((h) => h.status === 'healthy').length,
  };
}

/** Open fds may differ by this much between idle-warm and settled (dockerd API sockets in flight). */
const FD_MARGIN = 16;

export interface CheckInputs {
  plan: SoakPlan;
  summary: TallySummary;
  end: Ending;
  memory: MemoryVerdict;
  reclaims: ReclaimWatch;
  brokerCounters: Record<string, Record<string, number>>;
  idleFds: number;
  deployment: string;
  /**
   * Acquires given up by their client in phases whose tallies are not `summary` (a sized run's
   * capacity steps, overload and recovery): the broker's reclaim counter counts theirs too.
   */
  gaveUpElsewhere?: number;
}

export function allChecks(x: CheckInputs): Check[] {
  const { end, memory } = x;
  const mb = (b: number): string => (b / 1e6).toFixed(1);
  const acquireGaveUp = (x.summary.outcomes[GAVE_UP_OUTCOME] ?? 0) + (x.gaveUpElsewhere ?? 0);
  const leaks = end.inside.leaks;
  return [
    { name: 'every answer as expected', pass: x.summary.errorCount === 0, detail: `${x.summary.errorCount} unexpected answers` },
    { name: 'pool back to full size', pass: end.settled.ok, detail: end.settled.detail },
    {
      name: 'no leaked processes in containers',
      pass: leaks.length === 0 && end.inside.containers === x.plan.containers,
      detail:
        `${end.inside.containers} containers; ${leaks.length ? `${leaks.length}: ${leaks.slice(0, 5).join('; ')}` : 'none'}` +
        ` (besides: ${end.inside.zombiesOfShells} zombies of live session shells, reaped at their next fork)`,
    },
    reclaimCheck(x.reclaims, counterTotal(x.brokerCounters.broker_sessions_reclaimed_total), acquireGaveUp),
    {
      name: 'broker memory flat after warm-up',
      pass: memory.flat,
      detail: `median RSS ${mb(memory.rssMedianSecondThirdBytes)} -> ${mb(memory.rssMedianLastThirdBytes)} MB (2nd -> last third), bound +${mb(memory.boundBytes)} MB`,
    },
    { name: 'no leaked fds in the broker', pass: end.settledFds <= x.idleFds + FD_MARGIN, detail: `${x.idleFds} idle warm, ${end.settledFds} settled (margin ${FD_MARGIN})` },
    { name: 'broker stops on SIGTERM', pass: !end.stop.killed, detail: `${(end.stop.stopMs / 1000).toFixed(1)} s` },
    { name: 'no leaked containers', pass: end.leftContainers === 0, detail: `${end.leftContainers} containers labelled ${x.deployment} after the stop` },
    ...(end.registrations
      ? [
          {
            name: 'no registration left',
            pass: Object.values(end.registrations).every((v) => (Array.isArray(v) ? v.length === 0 : v === 0)),
            detail: `after the load: ${end.registrations.workspaces} workspaces, ${end.registrations.lifecycleSandboxes} lifecycle sandboxes, ${end.registrations.groupContainers} group sandbox containers, ${end.registrations.taskContainers} task containers; after the stop: ${end.registrations.mounts.length} mounts under the groups' directory${end.registrations.mounts.length ? ` (${end.registrations.mounts.slice(0, 3).join(', ')})` : ''}`,
          },
        ]
      : []),
    {
      name: 'no broker child or container shim left',
      pass: end.leftHost.length === 0,
      detail: end.leftHost.length ? end.leftHost.join('; ') : `${end.hostPids.length} watched, all gone`,
    },
  ];
}
