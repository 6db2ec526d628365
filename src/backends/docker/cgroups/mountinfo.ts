/** /proc/self/mountinfo (proc(5)), parsed once for everyone who asks where something is mounted. */
import fs from 'node:fs';

export interface MountEntry {
  /** The mounted filesystem's own directory that appears at the mount point (`/` for a whole one). */
  root: string;
  mountPoint: string;
  fstype: string;
  superOptions: string[];
}

/**
 * `id parent major:minor root mountpoint options [optional fields] - fstype source superoptions`
 * per line; lines without the ` - ` separator are skipped. (Octal escapes for spaces are kept as
 * they are: none of the paths the broker looks for has one.)
 */
export function parseMountinfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!after) continue;
    const fields = before.split(' ');
    const [fstype, , superOptions = ''] = after.split(' ');
    out.push({ root: fields[3], mountPoint: fields[4], fstype, superOptions: superOptions.split(',') });
  }
  return out;
}

/** This process's mounts; empty when /proc cannot tell. */
export function readMountinfo(): MountEntry[] {
  try {
    return parseMountinfo(fs.readFileSync('/proc/self/mountinfo', 'latin1'));
  } catch {
    return [];
  }
}
