/**
 * The workspace's file routes' rules, whatever the backend: a filename resolves against the
 * workspace directory and must stay inside it (403 otherwise); reads are bounded (413 beyond).
 * The bytes move through the backend's FileAccess, inside the workspace's container.
 */
import path from 'node:path';
import type { FileAccess, FileChunk } from '../ports/backend';
import { BadRequestError, ForbiddenError, NotSupportedError, PayloadTooLargeError } from '../../common/errors';
import { checkPathText } from '../../common/pathText';
import type { Workspace } from './workspace';

export class WorkspaceFiles {
  constructor(
    private readonly files: FileAccess | undefined,
    /** The largest read, whole or partial (BROKER_WORKSPACE_MAX_READ_BYTES). */
    readonly maxReadBytes: number,
  ) {}

  /** The absolute path of `filename` in `ws`'s directory; 403 when it leaves it, 400 when no file system takes it. */
  resolve(ws: Workspace, filename: string): string {
    if (filename === '' || filename.includes('\0')) throw new BadRequestError("'filename' must be a non-empty path without NUL bytes");
    checkPathText(filename, "'filename'");
    const root = path.posix.resolve(ws.workdir);
    const target = checkPathText(path.posix.resolve(root, filename), "'filename' made absolute");
    if (target === root || !target.startsWith(`${root}/`)) {
      throw new ForbiddenError(`'${filename}' is outside the workspace directory ${root}/`);
    }
    return target;
  }

  async read(ws: Workspace, filename: string, offset = 0, limit: number | null = null): Promise<FileChunk & { path: string }> {
    const target = this.resolve(ws, filename);
    const partial = limit !== null;
    const want = partial ? Math.min(limit, this.maxReadBytes) : this.maxReadBytes + 1;
    const chunk = await this.access().readFile({ container: ws.container, workdir: ws.workdir }, path.posix.resolve(ws.workdir), target, { offset, limit: want });
    if (!partial && chunk.size > this.maxReadBytes) {
      throw new PayloadTooLargeError(`${filename} is ${chunk.size} bytes, over the ${this.maxReadBytes} bytes one read returns: use /api/read-partial`);
    }
    return { ...chunk, path: target };
  }

  async write(ws: Workspace, filename: string, content: Buffer): Promise<string> {
    const target = this.resolve(ws, filename);
    await this.access().writeFile({ container: ws.container, workdir: ws.workdir }, path.posix.resolve(ws.workdir), target, content);
    return target;
  }

  private access(): FileAccess {
    if (!this.files) throw new NotSupportedError('this backend has no file access');
    return this.files;
  }
}
