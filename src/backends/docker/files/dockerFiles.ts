/**
 * Workspace files in a container, through the engine's archive API: a HEAD for the path's stat
 * (symlinks followed by hand, each hop held to the workspace directory: 403 outside), a GET of a
 * one-file tarball to read, a PUT of one to write. No process in the container, so a container at
 * its pids limit still serves its files.
 */
import type Dockerode from 'dockerode';
import path from 'node:path';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import * as tar from 'tar-stream';
import type { FileAccess, FileChunk, FileOwner } from '../../../core/ports/backend';
import { BackendError, FileNotFoundError, ForbiddenError, NotAFileError, errorMessage } from '../../../common/errors';
import { DockerExecdFiles } from './dockerExecdFiles';
import { readInView } from './containerFsExec';
import { spool, stageFile } from './dockerArchiveStreams';

const MAX_SYMLINK_HOPS = 16;
/** Go's os.FileMode bits, as the engine reports them: directory, symlink, and the other non-regular kinds. */
const MODE_DIR = 2 ** 31;
const MODE_SYMLINK = 2 ** 27;
const MODE_NOT_REGULAR = [2 ** 31, 2 ** 27, 2 ** 26, 2 ** 25, 2 ** 24, 2 ** 21, 2 ** 19];

interface PathStat {
  size: number;
  mode: number;
  linkTarget: string;
}

function hasBit(mode: number, bit: number): boolean {
  return Math.floor(mode / bit) % 2 === 1;
}

export class DockerFiles extends DockerExecdFiles implements FileAccess {

  async readFile(owner: FileOwner, root: string, target: string, { offset, limit }: { offset: number; limit: number }): Promise<FileChunk> {
    const container = this.container(owner);
    const { view } = this.place(owner);
    // The engine's archive API sees the container's view only: an isolated session's file is found in its own.
    if (view !== null) return this.readFileInView(owner, view, root, target, offset, limit);
    const { real, stat } = await this.follow(container, root, target);
    if (!stat) throw new FileNotFoundError(target);
    if (MODE_NOT_REGULAR.some((bit) => hasBit(stat.mode, bit))) throw new NotAFileError(target);
    if (offset >= stat.size || limit === 0) return { content: Buffer.alloc(0), size: stat.size };
    const length = Math.min(limit, stat.size - offset);
    const archive = (await container.getArchive({ path: real })) as Readable;
    const content = await firstEntryRange(archive, offset, length);
    return { content, size: stat.size };
  }

  async writeFile(owner: FileOwner, root: string, target: string, content: Buffer): Promise<void> {
    const container = this.container(owner);
    // Every existing ancestor below the root, and the file itself, must not lead out of it.
    const rel = path.posix.relative(root, target).split('/');
    for (let i = 1; i <= rel.length; i++) {
      const at = path.posix.join(root, ...rel.slice(0, i));
      const { stat } = await this.follow(container, root, at);
      if (i === rel.length && stat && MODE_NOT_REGULAR.some((bit) => hasBit(stat.mode, bit))) throw new NotAFileError(target);
      if (i < rel.length && stat && !hasBit(stat.mode, MODE_DIR)) throw new NotAFileError(at);
    }
    const { view } = this.place(owner);
    if (view !== null) {
      // An isolated session's own view: resolved, checked and written there in one operation.
      const spooled = await spool(Readable.from([content]));
      try {
        await this.putInView(container, view, root, target, await stageFile(container, spooled), 0o644);
      } finally {
        await fs.promises.rm(spooled.file, { force: true });
      }
      return;
    }
    const pack = tar.pack();
    for (let i = 1; i < rel.length; i++) pack.entry({ name: `${rel.slice(0, i).join('/')}/`, type: 'directory', mode: 0o755 });
    pack.entry({ name: rel.join('/'), mode: 0o644 }, content);
    pack.finalize();
    try {
      await container.putArchive(await collect(pack), { path: root });
    } catch (err) {
      throw new BackendError(`could not write ${target} in ${owner.container.name}: ${errorMessage(err)}`);
    }
  }

  /**
   * `limit` bytes from `offset` of a file of an isolated session, resolved, checked and read in the
   * session's own view (its stat and its bytes alike), out of reach of a link swapped in meanwhile.
   */
  private async readFileInView(owner: FileOwner, view: number, root: string, target: string, offset: number, limit: number): Promise<FileChunk> {
    const { real, entry } = await this.statReal(owner, root, target);
    if (entry.type !== 'file') throw new NotAFileError(target);
    if (offset >= entry.size || limit === 0) return { content: Buffer.alloc(0), size: entry.size };
    const chunks: Buffer[] = [];
    for await (const chunk of await readInView(this.container(owner), view, root, real, offset, Math.min(limit, entry.size - offset))) chunks.push(chunk as Buffer);
    return { content: Buffer.concat(chunks), size: entry.size };
  }

  /**
   * The path's stat after its symlinks (null: missing), each hop checked against `root`. Every
   * component is followed in turn, not the last alone: the engine resolves a link among the
   * ancestors itself (`up` -> `..` makes `up/file` a file beside the directory), so a link anywhere
   * in the path is resolved here first and its target walked again from the root.
   */
  private async follow(container: Dockerode.Container, root: string, target: string): Promise<{ real: string; stat: PathStat | null }> {
    let real = root; // resolved so far: no link in it
    let rest = path.posix.relative(root, target).split('/');
    let stat: PathStat | null = null;
    for (let hops = 0; rest.length > 0; ) {
      const at = path.posix.join(real, rest[0]);
      stat = await statPath(container, at);
      if (!stat) return { real: path.posix.join(at, ...rest.slice(1)), stat: null };
      if (!hasBit(stat.mode, MODE_SYMLINK)) {
        real = at;
        rest = rest.slice(1);
        continue;
      }
      if (++hops > MAX_SYMLINK_HOPS) throw new ForbiddenError(`${target}: too many symlinks`);
      const next = path.posix.resolve(real, stat.linkTarget);
      if (!next.startsWith(`${root}/`)) throw new ForbiddenError(`${target} leads outside the workspace directory`);
      rest = [...path.posix.relative(root, next).split('/'), ...rest.slice(1)];
      real = root;
    }
    return { real, stat };
  }
}

async function statPath(container: Dockerode.Container, target: string): Promise<PathStat | null> {
  try {
    const res = (await container.infoArchive({ path: target })) as Readable & { headers?: Record<string, string> };
    res.resume();
    const header = res.headers?.['x-docker-container-path-stat'];
    if (!header) throw new BackendError(`the engine sent no stat for ${target}`);
    return JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as PathStat;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return null;
    throw err instanceof BackendError ? err : new BackendError(`could not stat ${target}: ${errorMessage(err)}`);
  }
}

/** `length` bytes from `offset` of the tarball's first file; the rest of the stream is dropped. */
function firstEntryRange(archive: Readable, offset: number, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const extract = tar.extract();
    const out = Buffer.alloc(length);
    let filled = 0;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      archive.destroy();
      extract.destroy();
      resolve(out.subarray(0, filled));
    };
    extract.on('entry', (_header, stream, next) => {
      let at = 0;
      stream.on('data', (data: unknown) => {
        const chunk = data as Buffer;
        const from = Math.max(0, offset - at);
        const to = Math.min(chunk.length, offset + length - at);
        if (to > from) filled += chunk.copy(out, filled, from, to);
        at += chunk.length;
        if (filled >= length) finish();
      });
      stream.on('end', () => (done ? undefined : finish()));
      void next;
    });
    extract.on('error', (err: Error) => (done ? undefined : reject(new BackendError(`could not read the file: ${err.message}`))));
    extract.on('finish', finish);
    archive.on('error', (err: Error) => (done ? undefined : reject(new BackendError(`could not read the file: ${err.message}`))));
    archive.pipe(extract);
  });
}

function collect(pack: tar.Pack): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    pack.on('data', (c: unknown) => chunks.push(c as Buffer));
    pack.on('end', () => resolve(Buffer.concat(chunks)));
    pack.on('error', reject);
  });
}
