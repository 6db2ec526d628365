/**
 * Process inspection. The host-level helpers (procAlive, pidsWithEnvPrefix, instancePids) read this
 * machine's /proc: tests that use them say "(local: /proc)" in their name and call them only when
 * testBackend === 'local' (on Docker the processes live in another pid namespace). findByMark is
 * shell text run inside a session, so it sees what the session sees on any backend.
 */
import fs from 'node:fs';

/** Alive = present and not a zombie (nobody reaps orphans here, so killed ones may linger as Z). */
export function procAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Live pids whose environment holds an entry starting with `prefix` (e.g. BROKER_SESSION_TAG=<instance>-). */
export function pidsWithEnvPrefix(prefix: string): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    let environ: string;
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`, 'latin1');
    } catch {
      continue;
    }
    if (environ.split('\0').some((e) => e.startsWith(prefix)) && procAlive(pid)) found.push(pid);
  }
  return found;
}

/** Live pids of the bash shells (and their children) a local broker instance started. */
export function instancePids(instance: string): number[] {
  return pidsWithEnvPrefix(`BROKER_SESSION_TAG=${instance}-`);
}

export function cmdline(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** A number no other process on the machine has in its command line (`sleep <mark>`), to find ours by. */
export function uniqueMark(): string {
  return String(3_000_000 + Math.floor(Math.random() * 6_000_000));
}

/**
 * Shell text, to run INSIDE a session (so it works on every backend), that prints the pids of live
 * processes whose command line contains `mark`, one a line; zombies have an empty command line.
 */
export function findByMark(mark: string): string {
  // The last digit in brackets keeps grep from matching its own command line.
  return `grep -lsa -- '${mark.slice(0, -1)}[${mark.slice(-1)}]' /proc/[0-9]*/cmdline | cut -d/ -f3 || true`;
}

/** Live pids whose parent is `pid` (read before that parent exits: orphans get another parent). */
export function childPids(pid: number): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid && procAlive(Number(name))) found.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}

/** /proc/<pid>/stat's start time: with the pid, it names a process even after pid reuse. */
export function startTimeOf(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}
