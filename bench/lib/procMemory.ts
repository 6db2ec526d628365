/**
 * Processes found by the broker's session tag (the BROKER_SESSION_TAG variable every shell and
 * terminal of a broker carries, in a container too: its processes are the host's), and their memory.
 */
import fs from 'node:fs';

const TAG = 'BROKER_SESSION_TAG=';

/** Live processes whose tag's value matches `value` (a workspace terminal's ends in `-t<n>`). */
export function processesTagged(value: RegExp): { pid: number; tag: string }[] {
  const out: { pid: number; tag: string }[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let environ: string;
    try {
      environ = fs.readFileSync(`/proc/${name}/environ`, 'latin1');
    } catch {
      continue; // gone meanwhile, or a kernel thread
    }
    const entry = environ.split('\0').find((e) => e.startsWith(TAG));
    if (entry && value.test(entry.slice(TAG.length))) out.push({ pid: Number(name), tag: entry.slice(TAG.length) });
  }
  return out;
}

/** Proportional (shared pages split among their users) and resident set size, bytes; 0 for a process gone. */
export function residentBytes(pid: number): { pss: number; rss: number } {
  try {
    const text = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1');
    const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    return { pss: kb('Pss'), rss: kb('Rss') };
  } catch {
    return { pss: 0, rss: 0 };
  }
}
