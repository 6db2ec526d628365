/**
 * Workspace files on the local backend. The workspace directory is a host directory here, so the
 * confinement is the broker's job: besides the caller's lexical check, what a path resolves to
 * through symlinks must stay inside the root (403), and the path is then used through descriptors
 * walked from the root (heldPaths.ts), out of reach of a link swapped in after the check.
 */
import fs from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { FileAccess, FileChunk, FileOwner } from '../../core/ports/backend';
import { FileNotFoundError, ForbiddenError, NotAFileError } from '../../common/errors';
import { localExecdFiles } from './localExecdFiles';
import { CREATE_NOFOLLOW, inHeldDir, onHeld } from './heldPaths';

export const localFiles: FileAccess = {
  async readFile(_owner: FileOwner, root: string, target: string, { offset, limit }): Promise<FileChunk> {
    const real = await realInside(root, target);
    const handle = await onHeld(root, real, (object) => fs.open(object, 'r')).catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? new FileNotFoundError(target) : err;
    });
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw new NotAFileError(target);
      const want = Math.max(0, Math.min(limit, stat.size - offset));
      const content = Buffer.alloc(want);
      const { bytesRead } = want > 0 ? await handle.read(content, 0, want, offset) : { bytesRead: 0 };
      return { content: content.subarray(0, bytesRead), size: stat.size };
    } finally {
      await handle.close();
    }
  },

  async writeFile(_owner: FileOwner, root: string, target: string, content: Buffer): Promise<void> {
    const parent = path.dirname(target);
    const nearest = nearestExisting(parent);
    const nearestReal = await realInside(root, nearest); // a symlinked parent must not lead out
    const parentReal = path.join(nearestReal, path.relative(nearest, parent));
    const existing = await fs.stat(target).catch(() => null);
    if (existing && !existing.isFile()) throw new NotAFileError(target);
    const real = existing ? await realInside(root, target) : path.join(parentReal, path.basename(target));
    await inHeldDir(root, real, true, (entry) => fs.writeFile(entry, content, { flag: CREATE_NOFOLLOW }));
  },

  ...localExecdFiles,
};

/** The real path of `target` (or of the path it would have), refused when it is outside root's. */
async function realInside(root: string, target: string): Promise<string> {
  const realRoot = await fs.realpath(root);
  const real = await fs.realpath(target).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') throw new FileNotFoundError(target);
    throw err;
  });
  if (real !== realRoot && !real.startsWith(`${realRoot}${path.sep}`)) throw new ForbiddenError(`${target} leads outside the workspace directory`);
  return real;
}

/** `dir` or its closest ancestor that exists. */
function nearestExisting(dir: string): string {
  let at = dir;
  while (!existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
  return at;
}
