/**
 * execd's file operations in a Docker container: metadata and changes through one exec of
 * containerFsScript.ts each, bytes through the archive API (dockerArchiveStreams.ts). The files
 * routes of the workspaces (readFile, writeFile) are DockerFiles', which extends this class.
 */
import type Dockerode from 'dockerode';
import fs from 'node:fs';
import path from 'node:path';
import type { ContainerRef, EntryInfo, FileOwner, Permission } from '../../../core/ports/backend';
import { BackendError, FileNotFoundError } from '../../../common/errors';
import { entryOfStatLine, fsError, readInView, runFsScript, throwFirstError, type FsPlace } from './containerFsExec';
import { archiveRange, putFile, spool, stageFile } from './dockerArchiveStreams';

/**
 * The container pid of the live isolated session whose working directory is `workdir` (its file
 * routes run in its own view: isolation/sessionView.ts), or null: the container's view.
 */
export type SessionViewOf = (ref: ContainerRef, workdir: string) => number | null;

/** Fields of one `E` record of a listing: marker, relative path, stat line. */
const LIST_RECORD = 3;
/** Of one `OK` record of a stat: marker, index, real path, stat line. */
const STAT_RECORD = 4;

function permissionArgs(p: string, permission: Partial<Permission>, fallbackMode: number): string[] {
  return [p, (permission.mode ?? fallbackMode).toString(8), permission.owner ?? '', permission.group ?? ''];
}

export class DockerExecdFiles {
  constructor(
    protected readonly docker: Dockerode,
    protected readonly viewOf: SessionViewOf = () => null,
  ) {}

  protected container(owner: FileOwner): Dockerode.Container {
    return this.docker.getContainer(owner.container.id);
  }

  /**
   * Where the owner's operations run: its session's view while that session's shell lives (its
   * working directory names it, whatever root the paths are held to), else the container's.
   */
  protected place(owner: FileOwner): FsPlace {
    return { view: this.viewOf(owner.container, owner.workdir) };
  }

  async stat(owner: FileOwner, root: string, target: string): Promise<EntryInfo> {
    return (await this.statReal(owner, root, target)).entry;
  }

  async list(owner: FileOwner, root: string, dir: string, maxDepth: number, maxEntries: number): Promise<EntryInfo[]> {
    const fields = await runFsScript(this.container(owner), 'list', root, [dir, String(maxDepth), String(maxEntries)], this.place(owner));
    const out: EntryInfo[] = [];
    for (let at = 0; at + LIST_RECORD <= fields.length; at += LIST_RECORD) {
      if (fields[at] === 'ERR') throw fsError(fields[at + 1], dir);
      if (fields[at] !== 'E') throw new BackendError(`a listing of ${dir} answered an unexpected record`);
      out.push(entryOfStatLine(fields[at + 2], path.posix.join(dir, fields[at + 1])));
    }
    return out;
  }

  async remove(owner: FileOwner, root: string, target: string, kind: 'file' | 'directory'): Promise<void> {
    throwFirstError(await runFsScript(this.container(owner), kind === 'file' ? 'rmfile' : 'rmdir', root, [target], this.place(owner)), [target]);
  }

  async setPermissions(owner: FileOwner, root: string, target: string, permission: Permission): Promise<void> {
    throwFirstError(await runFsScript(this.container(owner), 'chmod', root, permissionArgs(target, permission, permission.mode), this.place(owner)), [target]);
  }

  async move(owner: FileOwner, root: string, src: string, dest: string): Promise<void> {
    throwFirstError(await runFsScript(this.container(owner), 'mv', root, [src, dest], this.place(owner)), [src, dest]);
  }

  async makeDirectory(owner: FileOwner, root: string, target: string, permission: Permission): Promise<void> {
    throwFirstError(await runFsScript(this.container(owner), 'mkdir', root, permissionArgs(target, permission, permission.mode), this.place(owner)), [target]);
  }

  async readStream(owner: FileOwner, root: string, target: string, offset: number, length: number): Promise<NodeJS.ReadableStream> {
    const { real } = await this.statReal(owner, root, target);
    const { view } = this.place(owner);
    // In an isolated session's view the bytes are read there too: a link swapped in after the stat leads nowhere else.
    return view === null ? archiveRange(this.container(owner), real, offset, length) : readInView(this.container(owner), view, root, real, offset, length);
  }

  /**
   * Spool, then where to write (resolved and held to the root, parents made, by the script), then the
   * PUT, then an owner if one was asked for (the engine writes files as the container's root).
   */
  async writeStream(owner: FileOwner, root: string, target: string, content: NodeJS.ReadableStream, permission: Partial<Permission>): Promise<number> {
    const spooled = await spool(content);
    try {
      const container = this.container(owner);
      const place = this.place(owner);
      const fields = await runFsScript(container, 'target', root, [target, permission.owner ?? '', permission.group ?? ''], place);
      if (fields[0] === 'ERR') throw fsError(fields[1], target);
      const [real, existingMode] = [fields[1], fields[2]];
      const mode = permission.mode ?? (existingMode ? parseInt(existingMode, 8) : 0o644);
      if (place.view === null) await putFile(container, real, spooled, mode);
      else await this.putInView(container, place.view, root, target, await stageFile(container, spooled), mode);
      const owned = (permission.owner ?? 'root') !== 'root' || (permission.group ?? 'root') !== 'root';
      if (owned) throwFirstError(await runFsScript(container, 'chmod', root, permissionArgs(real, permission, mode), place), [target]);
      return spooled.size;
    } finally {
      await fs.promises.rm(spooled.file, { force: true });
    }
  }

  /**
   * A file staged in the container's own view (stageFile) written to `target` inside an isolated
   * session's view: resolved, held to the root, its parents made and its bytes written there, in one
   * operation (containerFsScript.ts `put`).
   */
  protected async putInView(container: Dockerode.Container, view: number, root: string, target: string, staged: string, mode: number): Promise<void> {
    let answer: string[];
    try {
      answer = await runFsScript(container, 'put', root, [target, mode.toString(8)], { view, staged });
    } catch (err) {
      // The put never started (it removes the staged file first thing): remove it here, or it would
      // stay in the container, unseen by any session, until the container goes.
      await runFsScript(container, 'rmfile', path.posix.dirname(staged), [staged]).catch(() => undefined);
      throw err;
    }
    throwFirstError(answer, [target]);
  }

  protected async statReal(owner: FileOwner, root: string, target: string): Promise<{ real: string; entry: EntryInfo }> {
    const fields = await runFsScript(this.container(owner), 'stat', root, [target], this.place(owner));
    if (fields[0] === 'ERR') throw fsError(fields[1], target);
    if (fields[0] !== 'OK' || fields.length < STAT_RECORD) throw new FileNotFoundError(target);
    return { real: fields[2], entry: entryOfStatLine(fields[3], target) };
  }
}
