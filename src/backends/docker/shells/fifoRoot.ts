/**
 * Where the named pipes live on the host. They are inodes like any file: on a journaled disk
 * filesystem every pipe made, renamed and removed is journal work (a 1024-session warm-up makes
 * ~4000), on a tmpfs it is not. Most hosts mount /run, the default's parent, as a tmpfs; where /run
 * is on a disk (some VMs, this project's CI machines among them) the default moves to /dev/shm,
 * unless /run/bash-broker is a mount of its own: a broker in a container is given the host's
 * directory that way (docker-compose.yml), and the engine must see the same directory (a
 * container's /dev/shm is its own). Wherever the engine does not see the pipes, `auto` falls back to
 * docker exec, as it would with any directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readMountinfo } from '../cgroups/mountinfo';

export const FIFO_ROOT_ON_RUN = '/run/bash-broker';
export const FIFO_ROOT_IN_MEMORY = '/dev/shm/bash-broker';

/** statfs(2) f_type magic numbers (linux/magic.h). */
const TMPFS_MAGIC = 0x01021994;
const RAMFS_MAGIC = 0x858458f6;

/**
 * true or false for the nearest existing ancestor of `dir` (the directory itself may not exist
 * yet); null when it cannot be told.
 */
export function inMemoryFs(dir: string): boolean | null {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    try {
      const { type } = fs.statfsSync(at);
      return type === TMPFS_MAGIC || type === RAMFS_MAGIC;
    } catch {
      if (at === path.dirname(at)) return null;
    }
  }
}

/** What the default's choice looks at; the real host unless a test says otherwise. */
export interface HostProbe {
  inMemoryFs(dir: string): boolean | null;
  /** Whether `dir` is a mount point (/proc/self/mountinfo). */
  isMountPoint(dir: string): boolean;
}

export const hostProbe: HostProbe = {
  inMemoryFs,
  isMountPoint: (dir) => readMountinfo().some((m) => m.mountPoint === dir),
};

/** The pipes directory when BROKER_DOCKER_FIFO_DIR is not set, and why (for the log). */
export function defaultFifoRoot(probe: HostProbe = hostProbe): { root: string; reason: string } {
  const keep = (reason: string): { root: string; reason: string } => ({ root: FIFO_ROOT_ON_RUN, reason });
  if (probe.isMountPoint(FIFO_ROOT_ON_RUN)) return keep(`${FIFO_ROOT_ON_RUN} is a mount of its own`);
  if (probe.inMemoryFs('/run') !== false) return keep('/run is a tmpfs');
  if (probe.inMemoryFs('/dev/shm') !== true) return keep('/run is on a disk, and /dev/shm is no tmpfs either');
  return { root: FIFO_ROOT_IN_MEMORY, reason: '/run is on a disk filesystem and /dev/shm is a tmpfs' };
}

/**
 * Makes `root` (mode 0700) when its parent is writable by others (/dev/shm, /tmp), and checks it is
 * this process's own: a directory there made first by another user, or a link, would let that user
 * swap the pipes of a container's sessions. Throws an Error saying what is wrong.
 */
export function ensureOwnRoot(root: string): void {
  let parentMode: number;
  try {
    parentMode = fs.statSync(path.dirname(root)).mode;
  } catch {
    return; // no parent yet: the broker makes the whole path itself, mode 0700
  }
  if ((parentMode & 0o002) === 0) return; // only its owner (root, for /run) can put anything there
  try {
    fs.mkdirSync(root, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const st = fs.lstatSync(root);
  const uid = process.getuid?.() ?? st.uid;
  if (!st.isDirectory()) throw new Error(`${root} is not a directory`);
  if (st.uid !== uid) throw new Error(`${root} belongs to uid ${st.uid}, not to this broker (uid ${uid})`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${root} is writable by others (mode ${(st.mode & 0o777).toString(8)})`);
}
