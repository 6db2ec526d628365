/** Whether an isolated session's private disk is full (dockerShell.ts reports it in a command's facts). */
import fs from 'node:fs';

/** An isolated session's private disk counts as full below this fraction free (a write that failed leaves at most a partial block). */
const DISK_FULL_FRACTION = 0.005;

/**
 * Whether the session's tmpfs (its upper layer and /dev, isolationScript.ts) is full: a statfs
 * through its bash's root from the engine's host, one syscall. Null when that cannot be done (no
 * host pid known: no session cgroup, or a remote engine).
 */
export function privateDiskFull(hostPid: number | undefined): boolean | null {
  if (!hostPid) return null;
  try {
    const { bavail, blocks } = fs.statfsSync(`/proc/${hostPid}/root/dev/shm`);
    return bavail <= blocks * DISK_FULL_FRACTION;
  } catch {
    return null;
  }
}
