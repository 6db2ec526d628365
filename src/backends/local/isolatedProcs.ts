/**
 * The processes of an isolated local shell, from the host: the spawned process is the session
 * init's waiter; bash runs below it (`depth` 2 for a new session: the waiter, its namespace's init,
 * then bash; 1 for a shell joining a session's namespaces). Their host pids come from
 * /proc/<pid>/task/<pid>/children, which lists a process's children as the host numbers them.
 */
import fs from 'node:fs';
import { delay } from '../../common/delay';

/** How long the session init's setup may take before its shell counts as not started (its mounts take about a millisecond). */
const START_TIMEOUT_MS = 30_000;
const POLL_MS = 2;
/** The session's tmpfs counts as full below this share of free blocks (a write of a few pages would fail). */
const DISK_FULL_FRACTION = 0.001;

function firstChild(pid: number): number | null {
  try {
    const first = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').trim().split(' ')[0];
    return first ? Number(first) : null;
  } catch {
    return null;
  }
}

/** True once `pid` runs another program than the session init (setpriv, then bash, replaced it). */
function execed(pid: number, initPid: number): boolean {
  try {
    return fs.readlinkSync(`/proc/${pid}/exe`) !== fs.readlinkSync(`/proc/${initPid}/exe`);
  } catch {
    return false;
  }
}

/**
 * The chain of host pids from below `waiter` down to bash (bash last), once bash runs; null when
 * the waiter is gone first (`gone`) or the setup takes too long.
 */
export async function isolatedBash(waiter: number, depth: 1 | 2, gone: () => boolean): Promise<number[] | null> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!gone() && Date.now() < deadline) {
    const chain: number[] = [];
    for (let at = waiter; chain.length < depth; ) {
      const child = firstChild(at);
      if (child === null) break;
      chain.push(child);
      at = child;
    }
    // The child forked by the init is still the init's image until it execs: wait for setpriv's or bash's.
    if (chain.length === depth && execed(chain[depth - 1], waiter)) return chain;
    await delay(POLL_MS);
  }
  return null;
}

/** Whether an isolated session's private tmpfs is full: a statfs of its root (the overlay reports its upper layer's filesystem). Null: cannot tell. */
export function privateDiskFull(bashPid: number): boolean | null {
  if (bashPid <= 0) return null;
  try {
    const { bavail, blocks } = fs.statfsSync(`/proc/${bashPid}/root/`);
    return bavail <= blocks * DISK_FULL_FRACTION;
  } catch {
    return null;
  }
}
