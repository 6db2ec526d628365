/**
 * execd's file operations in a Docker container: metadata and changes through one exec of
 * containerFsScript.ts each, bytes through the archive API (dockerArchiveStreams.ts). The files
 * routes of the workspaces (readFile, writeFile) are DockerFiles', which extends this class.
 */
import type Dockerode from 'dockerode';
import fs from 'node:fs';
import path from 'node:path';
import type { ContainerRef, EntryInfo, Permission } from '../../../core/ports/backend';
import { BackendError, FileNotFoundError } from '../../../common/errors';
import { entryOfStatLine, fsError, runFsScript, throwFirstError } from './containerFsExec';
import { archiveRange, putFile, spool } from './dockerArchiveStreams';

/** Fields of one `E` record of a listing: marker, relative path, stat line. */
const LIST_RECORD = 3;
/** Of one `OK` record of a stat: marker, index, real path, stat line. */
const STAT_RECORD = 4;

function permissionArgs(p: string, permission: Partial<Permission>, fallbackMode: number): string[] {
  return [p, (permission.mode ?? fallbackMode).toString(8), permission.owner ?? '', permission.group ?? ''];
}

export class DockerExecdFiles {
  constructor(protected readonly docker: Dockerode) {}

  private container(ref: ContainerRef): Dockerode.Container {
    return this.docker.getContainer(ref.id);
  }

  async stat(ref: ContainerRef, root: string, target: string): Promise<EntryInfo> {
    return (await this.statReal(ref, root, target)).entry;
  }

  async list(ref: ContainerRef, root: string, dir: string, maxDepth: number, maxEntries: number): Promise<EntryInfo[]> {
    const fields = await runFsScript(this.container(ref), 'list', root, [dir, String(maxDepth), String(maxEntries)]);
    const out: EntryInfo[] = [];
    for (let at = 0; at + LIST_RECORD <= fields.length; at += LIST_RECORD) {
      if (fields[at] === 'ERR') throw fsError(fields[at + 1], dir);
      if (fields[at] !== 'E') throw new BackendError(`a listing of ${dir} answered an unexpected record`);
      out.push(entryOfStatLine(fields[at + 2], path.posix.join(dir, fields[at + 1])));
    }
    return out;
  }

  async remove(ref: ContainerRef, root: string, target: string, kind: 'file' | 'directory'): Promise<void> {
    throwFirstError(await runFsScript(this.container(ref), kind === 'file' ? 'rmfile' : 'rmdir', root, [target]), [target]);
  }

  async setPermissions(ref: ContainerRef, root: string, target: string, permission: Permission): Promise<void> {
    throwFirstError(await runFsScript(this.container(ref), 'chmod', root, permissionArgs(target, permission, permission.mode)), [target]);
  }

  async move(ref: ContainerRef, root: string, src: string, dest: string): Promise<void> {
    throwFirstError(await runFsScript(this.container(ref), 'mv', root, [src, dest]), [src, dest]);
  }

  async makeDirectory(ref: ContainerRef, root: string, target: string, permission: Permission): Promise<void> {
    throwFirstError(await runFsScript(this.container(ref), 'mkdir', root, permissionArgs(target, permission, permission.mode)), [target]);
  }

  async readStream(ref: ContainerRef, root: string, target: string, offset: number, length: number): Promise<NodeJS.ReadableStream> {
    const { real } = await this.statReal(ref, root, target);
    return archiveRange(this.container(ref), real, offset, length);
  }

  /**
   * Spool, then where to write (resolved and held to the root, parents made, by the script), then the
   * PUT, then an owner if one was asked for (the engine writes files as the container's root).
   */
  async writeStream(ref: ContainerRef, root: string, target: string, content: NodeJS.ReadableStream, permission: Partial<Permission>): Promise<number> {
    const spooled = await spool(content);
    try {
      const container = this.container(ref);
      const fields = await runFsScript(container, 'target', root, [target]);
      if (fields[0] === 'ERR') throw fsError(fields[1], target);
      const [real, existingMode] = [fields[1], fields[2]];
      const mode = permission.mode ?? (existingMode ? parseInt(existingMode, 8) : 0o644);
      await putFile(container, real, spooled, mode);
      const owned = (permission.owner ?? 'root') !== 'root' || (permission.group ?? 'root') !== 'root';
      if (owned) throwFirstError(await runFsScript(container, 'chmod', root, permissionArgs(real, permission, mode)), [target]);
      return spooled.size;
    } finally {
      await fs.promises.rm(spooled.file, { force: true });
    }
  }

  private async statReal(ref: ContainerRef, root: string, target: string): Promise<{ real: string; entry: EntryInfo }> {
    const fields = await runFsScript(this.container(ref), 'stat', root, [target]);
    if (fields[0] === 'ERR') throw fsError(fields[1], target);
    if (fields[0] !== 'OK' || fields.length < STAT_RECORD) throw new FileNotFoundError(target);
    return { real: fields[2], entry: entryOfStatLine(fields[3], target) };
  }
}
