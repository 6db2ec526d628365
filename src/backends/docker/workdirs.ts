/**
 * Lease working directories in Docker containers: made on the control shell's fs lane (or uploaded
 * with putArchive when there are files, or when the lane cannot), removed on the fs lane, with the
 * removals that failed retried with the next one in the same container.
 */
import type Dockerode from 'dockerode';
import * as tar from 'tar-stream';
import type { ContainerRef, WorkdirFile } from '../../core/backend';
import { type ControlShell, PidsLimitError } from './controlShell';
import { BackendError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';

/** A lease's working directory (sessionWorkdir): the only paths the fs lane creates or removes. */
const WORKDIR = /^\/tmp\/s\/[0-9a-f]+\/?$/;
/** An acquire waits this long for the fs lane's mkdir before uploading the directory instead. */
const MKDIR_TIMEOUT_MS = 5_000;
/** A big working directory takes a while to remove on a busy container. */
const RM_TIMEOUT_MS = 60_000;
/** How often a removal held by the pids limit asks again (a builtin check, no fork). */
const ROOM_POLL_MS = 250;

export class DockerWorkdirs {
  /** Per container: working directories whose removal failed, retried with the next removal there. */
  private readonly unremovedDirs = new Map<string, Set<string>>();

  constructor(
    private readonly docker: Dockerode,
    /** The container's control shell, if it is connected. */
    private readonly controlOf: (containerId: string) => ControlShell | undefined,
  ) {}

  /**
   * One tar upload (putArchive) creates the directory and every file, parents included. Without
   * files a `mkdir` on the control shell's fs lane does (~1 ms against ~60 ms of dockerd work for an
   * upload); when that lane cannot (the container is at its pids limit, the lane is stuck or cannot
   * be opened) the upload of an empty directory does it, which needs no process in the container.
   */
  async prepare(ref: ContainerRef, dir: string, files: readonly WorkdirFile[]): Promise<void> {
    if (!WORKDIR.test(dir)) throw new BackendError(`refusing to create ${dir}`);
    const control = this.controlOf(ref.id);
    if (files.length === 0 && control?.alive) {
      try {
        await control.makeDir(dir, MKDIR_TIMEOUT_MS);
        return;
      } catch (err) {
        logger.debug({ container: ref.name, err: errorMessage(err) }, 'mkdir on the fs lane failed: uploading the directory instead');
      }
    }
    const tarball = await workdirTarball(dir, files);
    try {
      await this.docker.getContainer(ref.id).putArchive(tarball, { path: '/' });
    } catch (err) {
      throw new BackendError(`could not write files into ${ref.name}: ${errorMessage(err)}`);
    }
  }

  /**
   * `rm -rf` on the fs lane, with the directories of earlier removals that failed in this container
   * (the pool does not hand a failed directory back). While the container is at its pids limit the
   * removal waits (the slot stays CLEANING) and retries; past RM_TIMEOUT_MS it fails with a
   * BackendError (the slot goes BROKEN and is rebuilt with backoff) and the directory is kept for
   * the next removal in the container.
   */
  async remove(ref: ContainerRef, dir: string): Promise<void> {
    const control = this.controlOf(ref.id);
    if (!control) return; // the container is being replaced: its files go with it
    if (!WORKDIR.test(dir)) throw new BackendError(`refusing to remove ${dir}`);
    let pending = this.unremovedDirs.get(ref.id);
    if (!pending) this.unremovedDirs.set(ref.id, (pending = new Set()));
    pending.add(dir);
    const deadline = Date.now() + RM_TIMEOUT_MS;
    for (;;) {
      const dirs = [...pending];
      try {
        await control.removeDirs(dirs, Math.max(1, deadline - Date.now()));
        for (const d of dirs) pending.delete(d);
        return;
      } catch (err) {
        if (!(err instanceof PidsLimitError) || Date.now() + ROOM_POLL_MS >= deadline || !control.alive) throw err;
        await new Promise((resolve) => setTimeout(resolve, ROOM_POLL_MS).unref());
      }
    }
  }

  /** The container is gone: its directories went with it. */
  forget(containerId: string): void {
    this.unremovedDirs.delete(containerId);
  }
}

/** The directory, the parents of every file and the files, as one tarball rooted at `/`. */
function workdirTarball(dir: string, files: readonly WorkdirFile[]): Promise<Buffer> {
  const pack = tar.pack();
  const root = dir.replace(/^\/+|\/+$/g, '');
  const dirs = new Set<string>([root]);
  for (const f of files) {
    const parts = f.path.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(`${root}/${parts.slice(0, i).join('/')}`);
  }
  for (const d of [...dirs].sort()) pack.entry({ name: `${d}/`, type: 'directory', mode: 0o755 });
  for (const f of files) pack.entry({ name: `${root}/${f.path}`, mode: 0o644 }, f.content);
  pack.finalize();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    pack.on('data', (c: unknown) => chunks.push(c as Buffer));
    pack.on('end', () => resolve(Buffer.concat(chunks)));
    pack.on('error', reject);
  });
}
