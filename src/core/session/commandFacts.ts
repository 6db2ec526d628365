/**
 * A command's termination facts, as the kernel reported them: the wait status bash saw (through the
 * framing's end marker), and the deltas of its shell's cgroup counters (backend.ts UsageCounters)
 * across the command. Where a figure cannot be had it is null, never a guessed 0.
 */
import { constants } from 'node:os';
import type { UsageCounters } from '../ports/backend';

export interface CommandFacts {
  /** The broker sent the command ^C (and SIGKILL to what ignored it) because its timeout passed. */
  interrupted: boolean;
  /**
   * The signal that ended the command's last foreground process, from bash's status 128+N (bash sets
   * it from the wait status of a process killed by signal N; a command's own `exit 137` reads the same).
   */
  signal: string | null;
  /** The OOM killer killed a process of the session during the command (null: no memory cgroup of its own). */
  oomKilled: boolean | null;
  /** From the command line written to the shell to its end marker read, milliseconds (monotonic clock). */
  durationMs: number;
  /** CPU time of everything in the session's cgroup during the command (background jobs too), ms. */
  cpuMs: number | null;
  /** The session cgroup's peak memory charge during the command (resident pages and page cache), KiB. */
  maxRssKb: number | null;
  /** Bytes of each stream left out of the answer (beyond BROKER_MAX_OUTPUT_BYTES). */
  droppedBytes: { stdout: number; stderr: number };
  /** The session's private disk was full at the command's end (UsageCounters.diskFull); absent where it has none. */
  diskFull?: boolean | null;
  /** Connections and datagrams its network refused during the command (its egress policy); absent where it has no network of its own. */
  egressRefused?: number | null;
  /** The first EGRESS_REFUSED_HOSTS distinct `host:port` its egress rules refused during the command, in the kernel's order; absent where it has no network of its own. */
  egressRefusedTo?: string[] | null;
}

/** How many refused `host:port` a command's facts name at most (a scan would name thousands). */
export const EGRESS_REFUSED_HOSTS = 8;

/** The refusals of a command: the packets with no route, and the rules' refused flows that were not there at its start. */
function egressFacts(before: UsageCounters, after: UsageCounters): Pick<CommandFacts, 'egressRefused' | 'egressRefusedTo'> {
  if (after.egressRefusals === undefined) return {};
  const noRoutes = before.egressRefusals != null && after.egressRefusals != null ? Math.max(0, after.egressRefusals - before.egressRefusals) : null;
  if (!after.egressRefusedFlows || !before.egressRefusedFlows) return { egressRefused: noRoutes, egressRefusedTo: null };
  const earlier = new Set(before.egressRefusedFlows);
  const fresh = after.egressRefusedFlows.filter((f) => !earlier.has(f));
  const hosts = [...new Set(fresh.map((f) => f.split(' ')[0]!))].slice(0, EGRESS_REFUSED_HOSTS);
  return { egressRefused: noRoutes === null ? null : noRoutes + fresh.length, egressRefusedTo: hosts };
}

const SIGNAL_NAMES: ReadonlyMap<number, string> = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name]));

/** SIGKILL for 137, SIGINT for 130; null for a status that no signal explains. */
export function signalOfStatus(status: number | null): string | null {
  if (status === null || status <= 128 || status > 128 + 64) return null;
  return SIGNAL_NAMES.get(status - 128) ?? `SIG${status - 128}`;
}

export const NO_USAGE: UsageCounters = { cpuUsec: null, memoryPeakBytes: null, oomKills: null };

/** Rounded to microseconds: the answer is JSON, not a float dump. */
function ms(value: number): number {
  return Math.round(value * 1000) / 1000;
}

export function commandFacts(
  before: UsageCounters,
  after: UsageCounters,
  run: { status: number | null; interrupted: boolean; durationMs: number; droppedStdout: number; droppedStderr: number },
): CommandFacts {
  const cpu = before.cpuUsec !== null && after.cpuUsec !== null ? Math.max(0, after.cpuUsec - before.cpuUsec) / 1000 : null;
  return {
    interrupted: run.interrupted,
    signal: signalOfStatus(run.status),
    oomKilled: before.oomKills !== null && after.oomKills !== null ? after.oomKills > before.oomKills : null,
    durationMs: ms(run.durationMs),
    cpuMs: cpu === null ? null : ms(cpu),
    maxRssKb: after.memoryPeakBytes === null ? null : Math.ceil(after.memoryPeakBytes / 1024),
    droppedBytes: { stdout: run.droppedStdout, stderr: run.droppedStderr },
    ...(after.diskFull !== undefined ? { diskFull: after.diskFull } : {}),
    ...egressFacts(before, after),
  };
}
