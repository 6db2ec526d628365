/**
 * Processes created, from the `processes` line of /proc/stat (every fork and clone on the machine
 * since boot, threads included). Machine-wide: on Docker the containers' processes share the kernel,
 * so they count too; so does everyone else's work, which the idle rate measured before a job takes
 * out on average.
 */
import fs from 'node:fs';
import type { ForkCount } from '../protocol';
import { nowMs, sleep } from './stats';
import { windowDelta } from './sessionCpu';

export function processesCreated(): number {
  const m = /^processes (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'latin1'));
  return m ? Number(m[1]) : NaN;
}

/** The machine's fork rate per second over `ms`, while the caller does nothing. */
export async function idleForkRate(ms: number): Promise<number> {
  const a = processesCreated();
  const t0 = nowMs();
  await sleep(ms);
  return ((processesCreated() - a) * 1000) / (nowMs() - t0);
}

/**
 * Counts processes over the window [startInMs, startInMs + durationMs] from now: `done(episodes)`
 * gives the count once the window is over and the number of episodes it held is known.
 */
export function forkWindow(startInMs: number, durationMs: number): { done(episodes: number, idlePerSec: number): ForkCount | undefined } {
  const w = windowDelta(startInMs, durationMs, processesCreated);
  return {
    done(episodes: number, idlePerSec: number): ForkCount | undefined {
      const d = w.done();
      if (!d || episodes <= 0) return undefined;
      return { created: d.delta, idlePerSec, perEpisode: (d.delta - (idlePerSec * d.ms) / 1000) / episodes };
    },
  };
}
