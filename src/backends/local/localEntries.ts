/**
 * Paths of execd's file routes on the local backend, where a sandbox's directory is a host directory:
 * what a path really is (symlinks resolved by the kernel's realpath) must stay inside the root's
 * real path (403), and an entry's owner and group read as names from the host's databases.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Stats } from 'node:fs';
import type { EntryInfo, EntryType } from '../../core/ports/backend';
import { BadRequestError, FileNotFoundError, ForbiddenError } from '../../common/errors';

export async function realRoot(root: string): Promise<string> {
  return fs.realpath(root);
}

export function insideReal(rootReal: string, real: string): boolean {
  return rootReal === '/' || real === rootReal || real.startsWith(`${rootReal}/`);
}

function refuse(target: string): ForbiddenError {
  return new ForbiddenError(`${target} leads outside the sandbox's working directory`);
}

/** `target` with every symlink followed; 404 when it (or a directory on its way) is missing. */
export async function followInside(root: string, target: string): Promise<string> {
  const rootReal = await realRoot(root);
  const real = await fs.realpath(target).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') throw err;
    // A dangling symlink whose target is outside is an escape, not a missing file.
    const link = await fs.readlink(target).catch(() => null);
    if (link !== null && !insideReal(rootReal, path.resolve(path.dirname(target), link))) throw refuse(target);
    throw new FileNotFoundError(target);
  });
  if (!insideReal(rootReal, real)) throw refuse(target);
  return real;
}

/** `target` with its directory's symlinks followed but not its own last component (a delete, a move). */
export async function parentInside(root: string, target: string): Promise<string> {
  const dirReal = await followInside(root, path.dirname(target));
  const real = path.join(dirReal, path.basename(target));
  if (real === (await realRoot(root))) throw new ForbiddenError(`${target} is the sandbox's working directory itself, which stays`);
  return real;
}

/**
 * What `target` would be once made (mkdir -p): its nearest existing ancestor, symlinks followed and
 * held inside the root, with the missing rest appended.
 */
export async function toMakeInside(root: string, target: string): Promise<string> {
  const missing: string[] = [];
  let at = target;
  for (;;) {
    const exists = await fs.lstat(at).then(
      () => true,
      () => false,
    );
    if (exists || path.dirname(at) === at) break;
    missing.unshift(path.basename(at));
    at = path.dirname(at);
  }
  return path.join(await followInside(root, at), ...missing);
}

function typeOf(stat: Stats): EntryType {
  if (stat.isFile()) return 'file';
  if (stat.isDirectory()) return 'directory';
  if (stat.isSymbolicLink()) return 'symlink';
  return 'other';
}

/** uid and gid to names, from the host's /etc/passwd and /etc/group (read once per request). */
export class HostNames {
  private users: Map<string, string> | null = null;
  private groups: Map<string, string> | null = null;

  async user(id: number): Promise<string> {
    this.users ??= await idNames('/etc/passwd');
    return this.users.get(String(id)) ?? String(id);
  }

  async group(id: number): Promise<string> {
    this.groups ??= await idNames('/etc/group');
    return this.groups.get(String(id)) ?? String(id);
  }

  /** A name or a numeric id as a number; a name the host does not know is a 400. */
  async id(kind: 'user' | 'group', name: string): Promise<number> {
    if (/^\d+$/.test(name)) return Number(name);
    const byId = kind === 'user' ? (this.users ??= await idNames('/etc/passwd')) : (this.groups ??= await idNames('/etc/group'));
    for (const [id, n] of byId) if (n === name) return Number(id);
    throw new BadRequestError(`no ${kind} named ${JSON.stringify(name)} in the sandbox`);
  }
}

async function idNames(file: string): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    const [name, , id] = line.split(':');
    if (name && id !== undefined && !names.has(id)) names.set(id, name);
  }
  return names;
}

export async function entryOf(reported: string, stat: Stats, names: HostNames): Promise<EntryInfo> {
  return {
    path: reported,
    type: typeOf(stat),
    size: stat.isDirectory() ? 0 : stat.size,
    modifiedMs: stat.mtimeMs,
    createdMs: stat.birthtimeMs > 0 ? stat.birthtimeMs : stat.ctimeMs,
    owner: await names.user(stat.uid),
    group: await names.group(stat.gid),
    mode: stat.mode & 0o7777,
  };
}
