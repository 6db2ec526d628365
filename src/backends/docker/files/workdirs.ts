/**
 * Lease working directories in Docker containers: made and removed on the control shell's fs lane,
 * merged per container (fsBatch.ts), or uploaded with putArchive when there are files or when the
 * lane cannot; and, where the broker sees the container's filesystem from the host, a check that a
 * prepared directory is still there that costs no round trip.
 */
import fs from 'node:fs';
import type Dockerode from 'dockerode';
import * as tar from 'tar-stream';
import type { ContainerRef, WorkdirFile } from '../../../core/ports/backend';
import type { ControlShell } from '../control/controlShell';
import { FsBatcher } from './fsBatch';
import { writeFilesCommand } from './laneFiles';
import { LaneDeadlineError } from '../control/controlLane';
import { BackendError, errorMessage } from '../../../common/errors';
import { logger } from '../../../common/logger';

/**
 * A lease's working directory (sessionWorkdir): the only paths the fs lane creates or removes. An id
 * is hex, or on a node of a cluster `<node>.<incarnation>.<hex>` (cluster/clusterIds.ts): one segment
 * that starts with a letter or digit, so never '..' and never a path of its own.
 */
const WORKDIR = /^\/tmp\/s\/[0-9a-z][0-9a-z.-]*\/?$/;
/** A creation waits this long for the fs lane's mkdir before uploading the directory instead. */
const MKDIR_TIMEOUT_MS = 5_000;
/**
 * The files' write on the fs lane, queue wait included. Long: one that overran while running cannot
 * fall back to an upload (see prepare), and a starved container's lane takes seconds per turn.
 */
const FILES_WRITE_TIMEOUT_MS = 30_000;
/** A big working directory takes a while to remove on a busy container. */
const RM_TIMEOUT_MS = 60_000;
/** Below this fraction of /tmp's filesystem free, a removal is not held with the others (fsBatch.ts). */
const TMP_SHORT_FRACTION = 0.1;
/** A container's /tmp space is looked at (a statfs through /proc: a path walk) at most this often. */
const TMP_SPACE_TTL_MS = 250;

export class DockerWorkdirs {
  /** Per container: its fs-lane batcher, for as long as it has a control shell. */
  private readonly batches = new Map<string, FsBatcher>();
  /** Per container: whether its /tmp was short of space when last looked at (tmpShort). */
  private readonly tmpSpace = new Map<string, { atMs: number; short: boolean }>();
  /** Per container: empty directories waiting for this turn's one upload (uploadEmpty). */
  private readonly emptyUploads = new Map<string, { dirs: string[]; done: Promise<void> }>();
  /** Per container: its root filesystem as the host sees it (/proc/<pid>/root), where the broker can. */
  private readonly hostRoots = new Map<string, string>();

  constructor(
    private readonly docker: Dockerode,
    /** The container's control shell, if it is connected. */
    private readonly controlOf: (containerId: string) => ControlShell | undefined,
  ) {}

  /**
   * Without files a `mkdir` on the fs lane makes the directory, merged with the container's other
   * requests. Files are written by builtins on the fs lane too, when it is idle (laneFiles.ts: no
   * process when the directory exists). A tar upload (putArchive) creates the directory and every
   * file, parents included, when the lane cannot (busy, the container at its pids limit, the lane
   * stuck or not open, the files too big for a command line): it needs no process in the container,
   * but costs dockerd a start of its own binary, ~150-230 ms of CPU here, against ~1 ms for the lane.
   */
  async prepare(ref: ContainerRef, dir: string, files: readonly WorkdirFile[]): Promise<void> {
    if (!WORKDIR.test(dir)) throw new BackendError(`refusing to create ${dir}`);
    const batch = this.batchOf(ref.id);
    if (files.length === 0 && batch?.lane.alive) {
      try {
        await batch.make(dir, MKDIR_TIMEOUT_MS);
        return;
      } catch (err) {
        logger.debug({ container: ref.name, err: errorMessage(err) }, 'mkdir on the fs lane failed: uploading the directory instead');
      }
    }
    if (files.length === 0) return this.uploadEmpty(ref, dir);
    // Only on an idle lane: behind a batch of removals or creations the write would wait its turn
    // (seconds on a starved container), and the upload, in dockerd's own cgroup, does not wait.
    const control = this.controlOf(ref.id);
    const command = control?.alive && control.fsLaneIdle ? writeFilesCommand(dir, files) : null;
    if (control && command !== null) {
      try {
        await control.writeFiles(command, files.length, FILES_WRITE_TIMEOUT_MS);
        return;
      } catch (err) {
        // A write that started and overran may still land after an upload, over what the lease
        // has written since: this slot is given up (the acquire tries another) instead.
        if (err instanceof LaneDeadlineError && err.running) throw new BackendError(`could not write files into ${ref.name} in time: ${errorMessage(err)}`);
        logger.debug({ container: ref.name, err: errorMessage(err) }, 'writing files on the fs lane failed: uploading them instead');
      }
    }
    await this.upload(ref, await workdirTarball([{ dir, files }]));
  }

  /**
   * Empty directories to upload, gathered for one turn of the event loop: a stock's batch whose
   * `mkdir` failed together (the container at its pids limit) goes up as one tarball, one putArchive
   * (~60 ms of dockerd), not one each.
   */
  private uploadEmpty(ref: ContainerRef, dir: string): Promise<void> {
    let gathering = this.emptyUploads.get(ref.id);
    if (!gathering) {
      const dirs: string[] = [];
      const done = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        this.emptyUploads.delete(ref.id);
        await this.upload(ref, await workdirTarball(dirs.map((d) => ({ dir: d, files: [] }))));
      });
      gathering = { dirs, done };
      this.emptyUploads.set(ref.id, gathering);
    }
    gathering.dirs.push(dir);
    return gathering.done;
  }

  private async upload(ref: ContainerRef, tarball: Buffer): Promise<void> {
    try {
      await this.docker.getContainer(ref.id).putArchive(tarball, { path: '/' });
    } catch (err) {
      throw new BackendError(`could not write files into ${ref.name}: ${errorMessage(err)}`);
    }
  }

  /**
   * `rm -rf` on the fs lane, merged with the container's other requests. While the container is at
   * its pids limit the removal waits and asks again; past RM_TIMEOUT_MS it fails with a BackendError,
   * and the directory is kept and removed with a later command in the container.
   */
  async remove(ref: ContainerRef, dir: string): Promise<void> {
    const batch = this.batchOf(ref.id);
    if (!batch) return; // the container is being replaced: its files go with it
    if (!WORKDIR.test(dir)) throw new BackendError(`refusing to remove ${dir}`);
    await batch.remove(dir, RM_TIMEOUT_MS, this.tmpShort(ref.id));
  }

  /**
   * The filesystem of the container's /tmp has less than TMP_SHORT_FRACTION free, as the host sees
   * it (statfs, one syscall): a lease filled it, and its removal must not be held. A session cannot
   * swap /tmp for a link (it is a mount point), and statfs only reads. False when the host cannot see.
   */
  private tmpShort(containerId: string): boolean {
    const root = this.hostRoots.get(containerId);
    if (root === undefined) return false;
    const now = Date.now();
    const known = this.tmpSpace.get(containerId);
    if (known && now - known.atMs < TMP_SPACE_TTL_MS) return known.short;
    let short = false;
    try {
      const s = fs.statfsSync(`${root}/tmp`);
      short = s.blocks > 0 && s.bavail < s.blocks * TMP_SHORT_FRACTION;
    } catch {
      /* cannot tell: not short */
    }
    this.tmpSpace.set(containerId, { atMs: now, short });
    return short;
  }

  /** Known to be missing: the host sees the container's root and `dir` is not in it. */
  gone(ref: ContainerRef, dir: string): boolean {
    const root = this.hostRoots.get(ref.id);
    return root !== undefined && !fs.existsSync(root + dir);
  }

  /**
   * Learns where the host sees the container's root (its init's /proc/<pid>/root), if it can: the
   * broker runs on the engine's host with the right to look. A pid of another pid namespace (a
   * broker in a container) names some other process: its cgroup, which names the container, says.
   */
  async learnHostRoot(ref: ContainerRef): Promise<void> {
    try {
      const pid = (await this.docker.getContainer(ref.id).inspect()).State.Pid;
      const cgroup = pid > 0 ? fs.readFileSync(`/proc/${pid}/cgroup`, 'latin1') : '';
      const root = `/proc/${pid}/root`;
      if (cgroup.includes(ref.id) && fs.existsSync(`${root}/tmp`)) this.hostRoots.set(ref.id, root);
    } catch {
      /* no host view: prepared directories are trusted as they are */
    }
  }

  /** The container is gone: its directories went with it. */
  forget(containerId: string): void {
    this.batches.get(containerId)?.close();
    this.batches.delete(containerId);
    this.hostRoots.delete(containerId);
    this.tmpSpace.delete(containerId);
  }

  private batchOf(containerId: string): FsBatcher | null {
    const control = this.controlOf(containerId);
    if (!control) return null;
    let batch = this.batches.get(containerId);
    if (batch?.lane !== control) {
      batch?.close();
      this.batches.set(containerId, (batch = new FsBatcher(control)));
    }
    return batch;
  }

  /** Commands run on the container's fs lane so far (for tests and the bench). */
  fsCommands(containerId: string): number {
    return this.batches.get(containerId)?.commands ?? 0;
  }
}

/** Each directory, the parents of every file and the files, as one tarball rooted at `/`. */
function workdirTarball(workdirs: readonly { dir: string; files: readonly WorkdirFile[] }[]): Promise<Buffer> {
  const pack = tar.pack();
  const rooted = workdirs.map(({ dir, files }) => ({ root: dir.replace(/^\/+|\/+$/g, ''), files }));
  const dirs = new Set<string>();
  for (const { root, files } of rooted) {
    dirs.add(root);
    for (const f of files) {
      const parts = f.path.split('/');
      for (let i = 1; i < parts.length; i++) dirs.add(`${root}/${parts.slice(0, i).join('/')}`);
    }
  }
  for (const d of [...dirs].sort()) pack.entry({ name: `${d}/`, type: 'directory', mode: 0o755 });
  for (const { root, files } of rooted) for (const f of files) pack.entry({ name: `${root}/${f.path}`, mode: 0o644 }, f.content);
  pack.finalize();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    pack.on('data', (c: unknown) => chunks.push(c as Buffer));
    pack.on('end', () => resolve(Buffer.concat(chunks)));
    pack.on('error', reject);
  });
}
