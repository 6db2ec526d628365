/**
 * execd's file operations on the local backend: Node's fs on host paths, each checked against the
 * sandbox's root by localEntries.ts and used through descriptors walked from the root (heldPaths.ts),
 * so a link a session swaps in after the check leads nowhere. An upload goes to a temporary file
 * beside its target and is renamed into place once whole, so a client that leaves mid-upload leaves
 * nothing behind.
 */
import fs from 'node:fs/promises';
import { constants } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { EntryInfo, FileAccess, FileOwner, Permission } from '../../core/ports/backend';
import { FileNotFoundError, NotADirectoryError, NotAFileError } from '../../common/errors';
import { byteCounter } from '../../common/byteCounter';
import { entryOf, followInside, HostNames, parentInside, toMakeInside } from './localEntries';
import { CREATE_NOFOLLOW, holdChild, inHeldDir, onHeld, onHeldDir, removeTree } from './heldPaths';

type ExecdFileAccess = Omit<FileAccess, 'readFile' | 'writeFile'>;

/** A missing path as the 404 the routes answer; anything else as it came. */
function notFound(target: string): (err: NodeJS.ErrnoException) => never {
  return (err) => {
    if (err.code === 'ENOENT') throw new FileNotFoundError(target);
    throw err;
  };
}

/** On a path (a held object's) or on an open file itself. */
async function applyPermission(real: string | fs.FileHandle, permission: Partial<Permission>, names = new HostNames()): Promise<void> {
  if (permission.mode !== undefined) await (typeof real === 'string' ? fs.chmod(real, permission.mode) : real.chmod(permission.mode));
  if (permission.owner === undefined && permission.group === undefined) return;
  const uid = permission.owner === undefined ? -1 : await names.id('user', permission.owner);
  const gid = permission.group === undefined ? -1 : await names.id('group', permission.group);
  await (typeof real === 'string' ? fs.chown(real, uid, gid) : real.chown(uid, gid));
}

/** `dir` a held directory (a /proc/self/fd path): each directory below is held in turn, no link followed. */
async function walk(dir: string, reportedDir: string, depthLeft: number, maxEntries: number, names: HostNames, out: EntryInfo[]): Promise<void> {
  const children = await fs.readdir(dir).catch(() => [] as string[]); // unreadable or gone meanwhile: nothing below
  for (const name of children) {
    if (out.length > maxEntries) return;
    const stat = await fs.lstat(`${dir}/${name}`).catch(() => null);
    if (!stat) continue;
    const reported = path.posix.join(reportedDir, name);
    out.push(await entryOf(reported, stat, names));
    if (!stat.isDirectory() || depthLeft <= 1) continue;
    const child = await holdChild(dir, name);
    if (!child) continue; // gone, or swapped for a link, meanwhile
    try {
      await walk(`/proc/self/fd/${child.fd}`, reported, depthLeft - 1, maxEntries, names, out);
    } finally {
      await child.close();
    }
  }
}

export const localExecdFiles: ExecdFileAccess = {
  async stat(_owner: FileOwner, root: string, target: string): Promise<EntryInfo> {
    const real = await followInside(root, target);
    return entryOf(target, await onHeld(root, real, (object) => fs.stat(object)).catch(notFound(target)), new HostNames());
  },

  async list(_owner: FileOwner, root: string, dir: string, maxDepth: number, maxEntries: number): Promise<EntryInfo[]> {
    const real = await followInside(root, dir);
    const own = await fs.lstat(dir).catch(notFound(dir));
    if (own.isSymbolicLink()) throw new NotADirectoryError(dir, `a symlink (to ${real}): list the directory it points to`);
    if (!own.isDirectory()) throw new NotADirectoryError(dir);
    const out: EntryInfo[] = [];
    await onHeldDir(root, real, false, (held) => walk(held, dir, maxDepth, maxEntries, new HostNames(), out));
    return out;
  },

  async remove(_owner: FileOwner, root: string, target: string, kind: 'file' | 'directory'): Promise<void> {
    const real = await parentInside(root, target).catch((err) => {
      if (kind === 'directory' && err instanceof FileNotFoundError) return null; // rm -rf of a missing path
      throw err;
    });
    if (real === null) return;
    await inHeldDir(root, real, false, async (entry) => {
      const stat = await fs.lstat(entry).catch(() => null);
      if (kind === 'file') {
        if (!stat) throw new FileNotFoundError(target);
        if (stat.isDirectory()) throw new NotAFileError(target);
        return fs.unlink(entry);
      }
      if (stat && !stat.isDirectory()) throw new NotADirectoryError(target);
      await removeTree(entry);
    });
  },

  async setPermissions(_owner: FileOwner, root: string, target: string, permission: Permission): Promise<void> {
    const real = await followInside(root, target);
    await onHeld(root, real, (object) => applyPermission(object, permission));
  },

  async move(_owner: FileOwner, root: string, src: string, dest: string): Promise<void> {
    const from = await parentInside(root, src);
    await fs.lstat(from).catch(notFound(src));
    const to = await parentInside(root, dest);
    const rename = (source: string, target: string): Promise<void> =>
      fs.rename(source, target).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOTDIR' || err.code === 'EISDIR' || err.code === 'ENOTEMPTY' || err.code === 'EEXIST') throw new NotAFileError(`${dest} (${err.code})`);
        throw err;
      });
    await inHeldDir(root, from, false, (source) => inHeldDir(root, to, false, (target) => rename(source, target)));
  },

  async makeDirectory(_owner: FileOwner, root: string, target: string, permission: Permission): Promise<void> {
    // An owner or group the sandbox does not know is a 400 before anything is made: a refused
    // request changes nothing.
    const names = new HostNames();
    if (permission.owner !== undefined) await names.id('user', permission.owner);
    if (permission.group !== undefined) await names.id('group', permission.group);
    const real = await toMakeInside(root, target);
    await onHeldDir(root, real, true, (dir) => applyPermission(dir, permission, names)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST' || err.code === 'ENOTDIR') throw new NotADirectoryError(target, 'a file is in the way');
      throw err;
    });
  },

  async readStream(_owner: FileOwner, root: string, target: string, offset: number, length: number): Promise<NodeJS.ReadableStream> {
    const real = await followInside(root, target);
    const handle = await onHeld(root, real, (object) => fs.open(object, 'r')).catch(notFound(target));
    return handle.createReadStream({ start: offset, end: offset + length - 1, autoClose: true });
  },

  async writeStream(_owner: FileOwner, root: string, target: string, content: NodeJS.ReadableStream, permission: Partial<Permission>): Promise<number> {
    const real = await toMakeInside(root, target);
    const count = byteCounter();
    await inHeldDir(root, real, true, async (entry, dir) => {
      const existing = await fs.stat(entry).catch(() => null);
      if (existing?.isDirectory()) throw new NotAFileError(target);
      const temp = `${dir}/.${path.basename(real)}.upload-${randomBytes(4).toString('hex')}`;
      const file = await fs.open(temp, CREATE_NOFOLLOW | constants.O_EXCL, 0o600);
      try {
        await pipeline(content, count.stream, async (source: AsyncIterable<Buffer>) => {
          for await (const chunk of source) for (let at = 0; at < chunk.length; ) at += (await file.write(chunk, at)).bytesWritten;
        });
        // On the file itself: its name is in the session's view, where a link may take it.
        await applyPermission(file, { mode: permission.mode ?? existing?.mode ?? 0o644, owner: permission.owner, group: permission.group });
        await file.close();
        await fs.rename(temp, entry);
      } catch (err) {
        await file.close().catch(() => undefined);
        await fs.unlink(temp).catch(() => undefined);
        throw err;
      }
    });
    return count.bytes();
  },
};
