/**
 * The file routes' use of a path after its check, out of reach of a session's symlinks. A route
 * checks what a path resolves to (realpath, held inside the root: localEntries.ts, localFiles.ts);
 * a session may swap a directory of it for a link to /etc between that check and the use, which
 * would send the broker, root on the host, into the host's own files. So the use never resolves the
 * path again: it walks the checked real path from the root one component at a time through file
 * descriptors (O_PATH), following no symlink (a link met there was swapped in since the check: 403),
 * and acts on the object it holds (`/proc/self/fd/N`) or on one name in the directory it holds
 * (`/proc/self/fd/N/name`, for the calls that never follow a final link: unlink, rename, mkdir, an
 * O_NOFOLLOW open). The kernel resolves those from the descriptor, not from the path.
 */
import fs from 'node:fs/promises';
import { constants } from 'node:fs';
import path from 'node:path';
import { ForbiddenError } from '../../common/errors';

/** Linux's O_PATH: a descriptor that names an object without opening it for reading or writing. */
const O_PATH = 0o10000000;
const { O_NOFOLLOW, O_DIRECTORY } = constants;
/** A new file in a held directory: never through a link that took the name meanwhile. */
export const CREATE_NOFOLLOW = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | O_NOFOLLOW;

function swapped(real: string): ForbiddenError {
  return new ForbiddenError(`${real} changed while it was used: a symlink took the place of a directory or file of it`);
}

/** A symlink where a directory was expected gives ENOTDIR (O_DIRECTORY) or ELOOP: a swap since the check. */
function isSwap(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ELOOP';
}

async function components(root: string, real: string): Promise<{ rootReal: string; names: string[] }> {
  const rootReal = await fs.realpath(root);
  const rel = path.relative(rootReal, real);
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new ForbiddenError(`${real} leads outside the sandbox's working directory`);
  return { rootReal, names: rel.split(path.sep).filter(Boolean) };
}

/**
 * The directory `realDir` (inside `root`, no symlink in it) held by a descriptor, walked from the
 * root without following a link; `make`: missing directories are made on the way (mkdir -p).
 */
async function holdDir(root: string, realDir: string, make: boolean): Promise<fs.FileHandle> {
  const { rootReal, names } = await components(root, realDir);
  let dir = await fs.open(rootReal, O_PATH | O_DIRECTORY);
  try {
    for (const name of names) {
      const at = `/proc/self/fd/${dir.fd}/${name}`;
      if (make) await fs.mkdir(at).catch((err: NodeJS.ErrnoException) => (err.code === 'EEXIST' ? undefined : Promise.reject(err)));
      const next = await fs.open(at, O_PATH | O_DIRECTORY | O_NOFOLLOW).catch(async (err: NodeJS.ErrnoException) => {
        // ENOTDIR: a file, or a link (O_NOFOLLOW with O_DIRECTORY refuses both): a link is a swap.
        if (err.code === 'ENOTDIR' && (await fs.lstat(at).catch(() => null))?.isSymbolicLink()) throw swapped(realDir);
        throw isSwap(err) ? swapped(realDir) : err;
      });
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (err) {
    await dir.close();
    throw err;
  }
}

/**
 * `use(entry, dir)` with `entry` the name of `real` in its held directory and `dir` that directory
 * (both as /proc/self/fd paths), for calls that do not follow a final link. `make`: the directory's
 * missing parts are made first.
 */
export async function inHeldDir<T>(root: string, real: string, make: boolean, use: (entry: string, dir: string) => Promise<T>): Promise<T> {
  const dir = await holdDir(root, path.dirname(real), make);
  try {
    const at = `/proc/self/fd/${dir.fd}`;
    return await use(`${at}/${path.basename(real)}`, at);
  } finally {
    await dir.close();
  }
}

/** `use(object)` with `object` the held object `real` itself (no link), as a /proc/self/fd path: stat, chmod, open, readdir follow it to that object. */
export async function onHeld<T>(root: string, real: string, use: (object: string) => Promise<T>): Promise<T> {
  return inHeldDir(root, real, false, async (entry) => {
    const held = await fs.open(entry, O_PATH | O_NOFOLLOW);
    try {
      if ((await held.stat()).isSymbolicLink()) throw swapped(real);
      return await use(`/proc/self/fd/${held.fd}`);
    } finally {
      await held.close();
    }
  });
}

/** The directory `real` held (made with its parents where missing), and `use` of it as a /proc/self/fd path. */
export async function onHeldDir<T>(root: string, real: string, make: boolean, use: (dir: string) => Promise<T>): Promise<T> {
  const dir = await holdDir(root, real, make);
  try {
    return await use(`/proc/self/fd/${dir.fd}`);
  } finally {
    await dir.close();
  }
}

/** The subdirectory `name` of the held directory `dir`, held in turn (a link there is not followed: null). */
export async function holdChild(dir: string, name: string): Promise<fs.FileHandle | null> {
  return fs.open(`${dir}/${name}`, O_PATH | O_DIRECTORY | O_NOFOLLOW).catch(() => null);
}

/** rm -rf of the entry `entry` of a held directory: each directory below held in turn, no link followed. */
export async function removeTree(entry: string): Promise<void> {
  const stat = await fs.lstat(entry).catch(() => null);
  if (!stat) return;
  if (!stat.isDirectory()) return fs.unlink(entry);
  const dir = await fs.open(entry, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  try {
    const at = `/proc/self/fd/${dir.fd}`;
    for (const name of await fs.readdir(at)) await removeTree(`${at}/${name}`);
  } finally {
    await dir.close();
  }
  await fs.rmdir(entry);
}
