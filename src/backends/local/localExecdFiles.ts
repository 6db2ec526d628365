/**
 * execd's file operations on the local backend: Node's fs on host paths, each held to the sandbox's
 * root by localEntries.ts. An upload goes to a temporary file beside its target and is renamed into
 * place once whole, so a client that leaves mid-upload leaves nothing behind.
 */
import fs from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { ContainerRef, EntryInfo, FileAccess, Permission } from '../../core/ports/backend';
import { FileNotFoundError, NotADirectoryError, NotAFileError } from '../../common/errors';
import { byteCounter } from '../../common/byteCounter';
import { entryOf, followInside, HostNames, parentInside, toMakeInside } from './localEntries';

type ExecdFileAccess = Omit<FileAccess, 'readFile' | 'writeFile'>;

/** A missing path as the 404 the routes answer; anything else as it came. */
function notFound(target: string): (err: NodeJS.ErrnoException) => never {
  return (err) => {
    if (err.code === 'ENOENT') throw new FileNotFoundError(target);
    throw err;
  };
}

async function applyPermission(real: string, permission: Partial<Permission>, names = new HostNames()): Promise<void> {
  if (permission.mode !== undefined) await fs.chmod(real, permission.mode);
  if (permission.owner === undefined && permission.group === undefined) return;
  const uid = permission.owner === undefined ? -1 : await names.id('user', permission.owner);
  const gid = permission.group === undefined ? -1 : await names.id('group', permission.group);
  await fs.chown(real, uid, gid);
}

async function walk(dir: string, reportedDir: string, depthLeft: number, maxEntries: number, names: HostNames, out: EntryInfo[]): Promise<void> {
  const children = await fs.readdir(dir).catch(() => [] as string[]); // unreadable or gone meanwhile: nothing below
  for (const name of children) {
    if (out.length > maxEntries) return;
    const real = path.join(dir, name);
    const stat = await fs.lstat(real).catch(() => null);
    if (!stat) continue;
    const reported = path.posix.join(reportedDir, name);
    out.push(await entryOf(reported, stat, names));
    if (stat.isDirectory() && depthLeft > 1) await walk(real, reported, depthLeft - 1, maxEntries, names, out);
  }
}

export const localExecdFiles: ExecdFileAccess = {
  async stat(_c: ContainerRef, root: string, target: string): Promise<EntryInfo> {
    const real = await followInside(root, target);
    return entryOf(target, await fs.stat(real).catch(notFound(target)), new HostNames());
  },

  async list(_c: ContainerRef, root: string, dir: string, maxDepth: number, maxEntries: number): Promise<EntryInfo[]> {
    const real = await followInside(root, dir);
    const own = await fs.lstat(dir).catch(notFound(dir));
    if (own.isSymbolicLink()) throw new NotADirectoryError(dir, `a symlink (to ${real}): list the directory it points to`);
    if (!own.isDirectory()) throw new NotADirectoryError(dir);
    const out: EntryInfo[] = [];
    await walk(real, dir, maxDepth, maxEntries, new HostNames(), out);
    return out;
  },

  async remove(_c: ContainerRef, root: string, target: string, kind: 'file' | 'directory'): Promise<void> {
    const real = await parentInside(root, target).catch((err) => {
      if (kind === 'directory' && err instanceof FileNotFoundError) return null; // rm -rf of a missing path
      throw err;
    });
    if (real === null) return;
    const stat = await fs.lstat(real).catch(() => null);
    if (kind === 'file') {
      if (!stat) throw new FileNotFoundError(target);
      if (stat.isDirectory()) throw new NotAFileError(target);
      await fs.unlink(real);
      return;
    }
    if (stat && !stat.isDirectory()) throw new NotADirectoryError(target);
    await fs.rm(real, { recursive: true, force: true });
  },

  async setPermissions(_c: ContainerRef, root: string, target: string, permission: Permission): Promise<void> {
    await applyPermission(await followInside(root, target), permission);
  },

  async move(_c: ContainerRef, root: string, src: string, dest: string): Promise<void> {
    const from = await parentInside(root, src);
    await fs.lstat(from).catch(notFound(src));
    const to = await parentInside(root, dest);
    await fs.rename(from, to).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOTDIR' || err.code === 'EISDIR' || err.code === 'ENOTEMPTY' || err.code === 'EEXIST') throw new NotAFileError(`${dest} (${err.code})`);
      throw err;
    });
  },

  async makeDirectory(_c: ContainerRef, root: string, target: string, permission: Permission): Promise<void> {
    const real = await toMakeInside(root, target);
    await fs.mkdir(real, { recursive: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST' || err.code === 'ENOTDIR') throw new NotADirectoryError(target, 'a file is in the way');
      throw err;
    });
    await applyPermission(real, permission);
  },

  async readStream(_c: ContainerRef, root: string, target: string, offset: number, length: number): Promise<NodeJS.ReadableStream> {
    const real = await followInside(root, target);
    const handle = await fs.open(real, 'r').catch(notFound(target));
    return handle.createReadStream({ start: offset, end: offset + length - 1, autoClose: true });
  },

  async writeStream(_c: ContainerRef, root: string, target: string, content: NodeJS.ReadableStream, permission: Partial<Permission>): Promise<number> {
    const real = await toMakeInside(root, target);
    const existing = await fs.stat(real).catch(() => null);
    if (existing?.isDirectory()) throw new NotAFileError(target);
    await fs.mkdir(path.dirname(real), { recursive: true });
    const temp = path.join(path.dirname(real), `.${path.basename(real)}.upload-${randomBytes(4).toString('hex')}`);
    const count = byteCounter();
    try {
      await pipeline(content, count.stream, createWriteStream(temp, { mode: 0o600 }));
      await applyPermission(temp, { mode: permission.mode ?? existing?.mode ?? 0o644, owner: permission.owner, group: permission.group });
      await fs.rename(temp, real);
    } catch (err) {
      await fs.rm(temp, { force: true });
      throw err;
    }
    return count.bytes();
  },
};
