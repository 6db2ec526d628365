/**
 * The sized load: open-loop arrivals, each one of the mix's episodes: a pool episode of the soak
 * (abuse, timeouts, floods, disconnects, abandoned leases: episode.ts), an SDK sandbox or a workspace
 * with a viewer (facades.ts), a group sandbox with actions or a task with the stub model
 * (facadesGroupTask.ts). Each arrival's hold time (its start to its end) is tallied by kind, for the
 * occupancy by Little's law. The overload phase runs the same mix faster into a tally of its own,
 * where the clear deviations are counted apart.
 */
import { runEpisode, type EpisodeOptions } from './episode';
import { sandboxEpisode, workspaceEpisode, type FacadeCtx } from './facades';
import { groupEpisode, taskEpisode } from './facadesGroupTask';
import type { SoakHttp } from './http';
import { openLoop } from './openLoop';
import type { Random } from './random';
import type { ReclaimWatch } from './reclaimWatch';
import { Tally } from './tally';
import { nowMs } from '../lib/stats';

/**
 * Shares of the arrivals. The facades' episodes hold a slot or a container of their own for seconds
 * and cost a container start (group sandboxes, tasks) or a terminal: a few percent each, as a fleet
 * of agents mostly runs commands in pooled sessions.
 */
export const MIX = { pool: 0.85, sandbox: 0.04, workspace: 0.05, group: 0.03, task: 0.03 } as const;
export type MixKind = keyof typeof MIX;
export const MIX_KINDS = Object.keys(MIX) as MixKind[];

/** The tally's operation for a kind's hold times. */
export const holdOp = (kind: MixKind): string => `hold: ${kind}`;

export interface MixedSpec {
  rateHz: number;
  durationMs: number;
  seed: number;
  episode: EpisodeOptions;
  /** The first arrivals are one of each kind, in order (a short run sees every kind), then the shares. */
  everyKindFirst?: boolean;
}

function pick(u: number): MixKind {
  let edge = 0;
  for (const kind of MIX_KINDS) if (u < (edge += MIX[kind])) return kind;
  return 'pool';
}

/** Runs the mix; resolves when every arrival's episode has ended. Returns the number of arrivals. */
export async function runMixed(http: SoakHttp, tally: Tally, reclaims: ReclaimWatch, facade: FacadeCtx, spec: MixedSpec): Promise<number> {
  const ctx = { ...facade, tally };
  const run: Record<MixKind, (rnd: Random) => Promise<void>> = {
    pool: (rnd) => runEpisode({ http, tally, rnd, reclaims }, spec.episode),
    sandbox: (rnd) => sandboxEpisode(ctx, rnd),
    workspace: (rnd) => workspaceEpisode(ctx, rnd),
    group: (rnd) => groupEpisode(ctx, rnd),
    task: (rnd) => taskEpisode(ctx, rnd),
  };
  return openLoop(spec.rateHz, spec.durationMs, spec.seed, async (i, rnd) => {
    const u = rnd.next();
    const kind = spec.everyKindFirst && i < MIX_KINDS.length ? MIX_KINDS[i] : pick(u);
    const t0 = nowMs();
    try {
      await run[kind](rnd);
    } finally {
      tally.latency(holdOp(kind), nowMs() - t0);
      tally.count(`arrivals: ${kind}`);
    }
  });
}

/**
 * What overload may do, and nothing else: a 503 with Retry-After (the code says which), an acquire
 * that times out (the same 503, pool_exhausted), a command that times out with the timeout answer.
 */
export function clearDeviation(kind: string, detail: string): string | null {
  if (/: HTTP 503 pool_exhausted$/.test(kind)) return 'an acquire timed out: 503 pool_exhausted with Retry-After';
  if (/wrong output$/.test(kind) && /"return_code":-1/.test(detail) && /Command timed out after/.test(detail)) return 'a command timed out with the timeout answer';
  if (/^(sdk sandbox|workspace|group sandbox|task)\b.*: HTTP 503$/.test(kind)) return 'a facade answered 503';
  if (/^sdk sandbox episode: /.test(kind) && /\b503\b/.test(detail)) return 'a facade answered 503';
  return null;
}

/** A tally for the overload: clear deviations are counted as outcomes, anything else stays an error. */
export class OverloadTally extends Tally {
  override error(kind: string, detail: string): void {
    const clear = clearDeviation(kind, detail);
    if (clear) this.count(`clear deviation: ${clear}`);
    else super.error(kind, detail);
  }
}
