/**
 * How starved the machine's CPUs were, as the kernel tells it: pressure stall information
 * (/proc/pressure/cpu, the `some` line: microseconds in which at least one runnable task waited for
 * a CPU) and the number of runnable tasks (/proc/loadavg's fourth field). A run whose every client
 * waits on the CPU most of the time measures the machine as much as the broker: reports say so.
 */
import fs from 'node:fs';

/** The `some` total of /proc/pressure/cpu in microseconds, or null where the kernel has no PSI. */
export function cpuPressureSomeUs(text = readOrEmpty('/proc/pressure/cpu')): number | null {
  const m = /^some .*\btotal=(\d+)/m.exec(text);
  return m ? Number(m[1]) : null;
}

/** Runnable tasks now (running or waiting for a CPU), or null when /proc/loadavg says nothing. */
export function runnableTasks(text = readOrEmpty('/proc/loadavg')): number | null {
  const m = /^\S+ \S+ \S+ (\d+)\//.exec(text);
  return m ? Number(m[1]) : null;
}

/** The share of `wallMs` in which some task waited for a CPU, from two cpuPressureSomeUs readings. */
export function pressureShare(fromUs: number | null, toUs: number | null, wallMs: number): number | null {
  if (fromUs === null || toUs === null || wallMs <= 0) return null;
  return Math.min(1, Math.max(0, (toUs - fromUs) / 1000 / wallMs));
}

function readOrEmpty(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
