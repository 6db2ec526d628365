/**
 * execd's files and directories (OpenSandbox's execd API), over the FileAccess of the sandbox's own backend (its handle's): every path
 * resolved and held to the sandbox (execdPaths.ts), every operation inside its container. The rules
 * that do not depend on the backend live here: entry order, the glob of a search, replace's counts,
 * and the size limits.
 */
import { Readable } from 'node:stream';
import picomatch from 'picomatch';
import { BadRequestError, NotSupportedError, PayloadTooLargeError } from '../../common/errors';
import type { EntryInfo, FileAccess, FileOwner, Permission } from '../ports/backend';
import type { SandboxHandle } from '../sandbox/sandboxHandle';
import { resolveSandboxPath, type ByteRange } from './execdPaths';

export interface ExecdFileLimits {
  /** The largest file an upload writes (BROKER_EXECD_MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
  /** The largest file a replace rewrites: it is held in memory (BROKER_EXECD_MAX_REPLACE_BYTES). */
  maxReplaceBytes: number;
  /** The most entries a listing or a search walks (BROKER_EXECD_MAX_LIST_ENTRIES). */
  maxListEntries: number;
}

export interface ReplaceItem {
  old: string;
  new: string;
}

export interface Download {
  /** The whole file's size. */
  size: number;
  range: ByteRange;
  body: NodeJS.ReadableStream;
}

/** A listing deeper than this is asked as "no limit" (find's -maxdepth takes any int; a walk does not care). */
const UNLIMITED_DEPTH = 4096;

export class ExecdFiles {
  constructor(readonly limits: ExecdFileLimits) {}

  /** FileInfo of each path, symlinks followed; the first missing one is a 404. */
  async info(handle: SandboxHandle, paths: string[]): Promise<Map<string, EntryInfo>> {
    const out = new Map<string, EntryInfo>();
    for (const raw of requirePaths(paths)) {
      const at = resolveSandboxPath(handle, raw);
      out.set(raw, await this.access(handle).stat(ownerOf(handle), at.root, at.path));
    }
    return out;
  }

  async removeFiles(handle: SandboxHandle, paths: string[]): Promise<void> {
    for (const raw of requirePaths(paths)) {
      const at = resolveSandboxPath(handle, raw, 'path', false);
      await this.access(handle).remove(ownerOf(handle), at.root, at.path, 'file');
    }
  }

  async removeDirectories(handle: SandboxHandle, paths: string[]): Promise<void> {
    for (const raw of requirePaths(paths)) {
      const at = resolveSandboxPath(handle, raw, 'path', false);
      await this.access(handle).remove(ownerOf(handle), at.root, at.path, 'directory');
    }
  }

  async setPermissions(handle: SandboxHandle, entries: Map<string, Permission>): Promise<void> {
    for (const [raw, permission] of entries) {
      const at = resolveSandboxPath(handle, raw);
      await this.access(handle).setPermissions(ownerOf(handle), at.root, at.path, permission);
    }
  }

  async makeDirectories(handle: SandboxHandle, entries: Map<string, Permission>): Promise<void> {
    for (const [raw, permission] of entries) {
      const at = resolveSandboxPath(handle, raw);
      await this.access(handle).makeDirectory(ownerOf(handle), at.root, at.path, permission);
    }
  }

  async move(handle: SandboxHandle, moves: { src: string; dest: string }[]): Promise<void> {
    for (const { src, dest } of moves) {
      const from = resolveSandboxPath(handle, src, 'src', false);
      const to = resolveSandboxPath(handle, dest, 'dest', false);
      await this.access(handle).move(ownerOf(handle), from.root, from.path, to.path);
    }
  }

  /** Entries below `dir`, `depth` levels down, in lexical order, each directory's entries after it. */
  async list(handle: SandboxHandle, dir: string, depth: number): Promise<EntryInfo[]> {
    const at = resolveSandboxPath(handle, dir);
    const entries = await this.access(handle).list(ownerOf(handle), at.root, at.path, depth, this.limits.maxListEntries);
    return this.bounded(entries, dir).sort(byPathSegments);
  }

  /**
   * Files (everything but directories) below `dir` whose path relative to it matches the glob; a
   * pattern without a slash matches the name at any depth (`*.txt`), as a search box does.
   */
  async search(handle: SandboxHandle, dir: string, pattern: string): Promise<EntryInfo[]> {
    const at = resolveSandboxPath(handle, dir);
    if (pattern === '' || pattern.includes('\0')) throw new BadRequestError("'pattern' must be a non-empty glob without NUL bytes");
    const matches = picomatch(pattern, { dot: true, basename: !pattern.includes('/') });
    const entries = await this.access(handle).list(ownerOf(handle), at.root, at.path, UNLIMITED_DEPTH, this.limits.maxListEntries);
    const prefix = at.path === '/' ? 1 : at.path.length + 1;
    return this.bounded(entries, dir)
      .filter((e) => e.type !== 'directory' && matches(e.path.slice(prefix)))
      .sort(byPathSegments);
  }

  /** Every occurrence of `old` replaced by `new` in each file, mode and owner kept; how many per file. */
  async replace(handle: SandboxHandle, items: Map<string, ReplaceItem>): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const [raw, item] of items) {
      const at = resolveSandboxPath(handle, raw);
      const access = this.access(handle);
      const info = await access.stat(ownerOf(handle), at.root, at.path);
      if (info.size > this.limits.maxReplaceBytes) {
        throw new PayloadTooLargeError(`${raw} is ${info.size} bytes, over the ${this.limits.maxReplaceBytes} bytes a replace rewrites (BROKER_EXECD_MAX_REPLACE_BYTES)`);
      }
      const { content } = await access.readFile(ownerOf(handle), at.root, at.path, { offset: 0, limit: this.limits.maxReplaceBytes });
      const { replaced, count } = replaceAll(content, Buffer.from(item.old), Buffer.from(item.new));
      if (count > 0) {
        await access.writeStream(ownerOf(handle), at.root, at.path, Readable.from([replaced]), { mode: info.mode, owner: info.owner, group: info.group });
      }
      counts.set(raw, count);
    }
    return counts;
  }

  /** The file's size and a stream of the bytes `range` picks (null: the whole file). */
  async download(handle: SandboxHandle, raw: string, pickRange: (size: number) => ByteRange): Promise<Download & { path: string }> {
    const at = resolveSandboxPath(handle, raw);
    const access = this.access(handle);
    const info = await access.stat(ownerOf(handle), at.root, at.path);
    if (info.type !== 'file') throw new BadRequestError(`${raw} is a ${info.type}, not a file: only files download`);
    const range = pickRange(info.size);
    const body = range.length === 0 ? Readable.from([]) : await access.readStream(ownerOf(handle), at.root, at.path, range.offset, range.length);
    return { size: info.size, range, body, path: at.path };
  }

  /** Writes one uploaded file; `content` is the multipart part's stream (its size bound by the caller). */
  async upload(handle: SandboxHandle, raw: unknown, content: NodeJS.ReadableStream, permission: Partial<Permission>): Promise<number> {
    const at = resolveSandboxPath(handle, raw, 'metadata.path', false);
    return this.access(handle).writeStream(ownerOf(handle), at.root, at.path, content, permission);
  }

  private bounded(entries: EntryInfo[], dir: string): EntryInfo[] {
    if (entries.length > this.limits.maxListEntries) {
      throw new PayloadTooLargeError(`${dir} holds more than ${this.limits.maxListEntries} entries (BROKER_EXECD_MAX_LIST_ENTRIES): list or search a smaller directory`);
    }
    return entries;
  }

  /** The sandbox's own backend's: only it knows the sandbox's session, and so the view its files are in. */
  private access(handle: SandboxHandle): FileAccess {
    if (!handle.backend.files) throw new NotSupportedError(`the ${handle.backend.kind} backend has no file access`);
    return handle.backend.files;
  }
}

/**
 * Whose files: its container, and its working directory, which names its session (and so, with
 * per-lease isolation, the view its commands see) whatever root its paths are held to.
 */
function ownerOf(handle: SandboxHandle): FileOwner {
  return { container: handle.container, workdir: handle.root };
}

function requirePaths(paths: string[]): string[] {
  if (paths.length === 0) throw new BadRequestError("'path' is required (repeat it for several paths)");
  return paths;
}

/** Depth-first lexical order: a directory, then its entries, then its next sibling. */
function byPathSegments(a: EntryInfo, b: EntryInfo): number {
  const x = a.path.split('/');
  const y = b.path.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return x.length - y.length;
}

/** Go's bytes.ReplaceAll over raw bytes (a file need not be UTF-8), with the count. */
export function replaceAll(content: Buffer, old: Buffer, replacement: Buffer): { replaced: Buffer; count: number } {
  const parts: Buffer[] = [];
  let count = 0;
  let from = 0;
  for (let at = content.indexOf(old, from); at >= 0; at = content.indexOf(old, from)) {
    parts.push(content.subarray(from, at), replacement);
    from = at + old.length;
    count++;
  }
  parts.push(content.subarray(from));
  return { replaced: count === 0 ? content : Buffer.concat(parts), count };
}
