/**
 * The sized load: open-loop arrivals at a share of the measured capacity, each arrival one of the
 * mix's episodes: a pool episode of the soak (abuse, timeouts, floods, disconnects, abandoned
 * leases: episode.ts), an SDK sandbox or a workspace with a viewer (facades.ts). The overload phase
 * runs the same mix faster into a tally of its own, where the clear deviations are counted apart.
 */
import { runEpisode, type EpisodeOptions } from './episode';
import { sandboxEpisode, workspaceEpisode, type FacadeCtx } from './facades';
import type { SoakHttp } from './http';
import { openLoop } from './openLoop';
import type { ReclaimWatch } from './reclaimWatch';
import { Tally } from './tally';

/** Shares of the arrivals. The facades' episodes cost a container's slot for seconds: a few percent. */
export const MIX = { pool: 0.9, sandbox: 0.04, workspace: 0.06 } as const;

export interface MixedSpec {
  rateHz: number;
  durationMs: number;
  seed: number;
  episode: EpisodeOptions;
  /** At most this many SDK sandboxes at once: the warm pool's size (a create beyond it would start a container). */
  warmSlots: number;
}

/** Runs the mix; resolves when every arrival's episode has ended. Returns the number of arrivals. */
export async function runMixed(http: SoakHttp, tally: Tally, reclaims: ReclaimWatch, facade: FacadeCtx, spec: MixedSpec): Promise<number> {
  let sandboxesOpen = 0;
  return openLoop(spec.rateHz, spec.durationMs, spec.seed, async (_i, rnd) => {
    const u = rnd.next();
    if (u < MIX.pool) return runEpisode({ http, tally, rnd, reclaims }, spec.episode);
    if (u < MIX.pool + MIX.sandbox) {
      if (sandboxesOpen >= spec.warmSlots) {
        tally.count('sdk sandbox: every warm sandbox taken, arrival skipped');
        return;
      }
      sandboxesOpen++;
      try {
        return await sandboxEpisode({ ...facade, tally }, rnd);
      } finally {
        sandboxesOpen--;
      }
    }
    return workspaceEpisode({ ...facade, tally }, rnd);
  });
}

/**
 * What overload may do, and nothing else: a 503 with Retry-After (the code says which), an acquire
 * that times out (the same 503, pool_exhausted), a command that times out with the timeout answer.
 */
export function clearDeviation(kind: string, detail: string): string | null {
  if (/: HTTP 503 pool_exhausted$/.test(kind)) return 'an acquire timed out: 503 pool_exhausted with Retry-After';
  if (/wrong output$/.test(kind) && /"return_code":-1/.test(detail) && /Command timed out after/.test(detail)) return 'a command timed out with the timeout answer';
  if (/^(sdk sandbox|workspace) episode: /.test(kind) && /\b503\b/.test(detail)) return 'a facade answered 503';
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
