/**
 * Snapshot layers on the docker backend (docs/snapshots.md): one directory of the engine's host per
 * deployment, beside its pipes, bound read-write at /.bkr-snap into each pool container. No session
 * sees it (a session's root is an overlay of its container's root filesystem alone, never of the
 * mounts on it); each session's init does the copies (isolation/sessionSnapshot.c): a snapshot's
 * `u` is the session's upper layer as it was, its `w` the lease's working directory. A session
 * started from a snapshot finds its layers in `at/<its working directory id>`, written here before
 * its spawn: they become lower layers of its overlay, above the image's root, with a fresh upper
 * layer of its own. Nothing of the image is ever copied.
 *
 * The records are the broker's memory: its close removes the directory, and its start removes one
 * that a crashed broker of its deployment left.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { SessionShell, SnapshotLayers } from '../../../core/ports/snapshotLayers';
import { BackendError, errorMessage } from '../../../common/errors';
import { logger } from '../../../common/logger';
import { SnapshotsUnsupportedError } from '../../../core/snapshots/snapshotErrors';
import { DockerShell } from '../shells/dockerShell';
import { sessionWorkdirId } from '../isolation/sessionIsolation';

/** Where the store appears in each pool container. */
export const SNAPSHOT_MOUNT = '/.bkr-snap';
/**
 * Snapshot layers one view may stack. overlayfs takes up to 500 lower layers, but each is a lookup
 * on every miss and the mount's options must fit a page: 16 keeps a lookup cheap and the options
 * short. A fork at this depth answers 409 (snapshot_too_deep).
 */
export const MAX_SNAPSHOT_DEPTH = 16;
/** A copy of a 100 MB layer takes well under a second; a starved container is slower. */
const CAPTURE_TIMEOUT_MS = 120_000;

export class DockerSnapshotLayers implements SnapshotLayers {
  readonly maxDepth = MAX_SNAPSHOT_DEPTH;

  /** Why there is no store (its directory could not be made): snapshots answer that, sessions go on. */
  private unavailable: string | null = null;

  constructor(private readonly hostDir: string) {}

  /** The bind of the store into a pool container (HostConfig.Binds); null without a store. */
  get bind(): string | null {
    return this.unavailable === null ? `${this.hostDir}:${SNAPSHOT_MOUNT}` : null;
  }

  /**
   * At the broker's start: an earlier broker's layers removed, the store made (only the broker writes
   * its starts). A store that cannot be made (the pipes' directory is not writable: the sessions then
   * go through docker exec, without the session init that takes snapshots) leaves the broker without
   * snapshots, not without sessions.
   */
  async init(): Promise<void> {
    try {
      await fs.promises.rm(this.hostDir, { recursive: true, force: true });
      // Not recursive: the pipes' root is made by then, and Node's recursive mkdir never settles
      // under /proc (seen with BROKER_DOCKER_FIFO_DIR=/proc/no-such-dir).
      await fs.promises.mkdir(this.hostDir, { mode: 0o700 });
      await fs.promises.mkdir(path.join(this.hostDir, 'at'), { mode: 0o700 });
    } catch (err) {
      this.unavailable = `the snapshot store ${this.hostDir} cannot be made (${errorMessage(err)})`;
      logger.warn({ dir: this.hostDir, err: errorMessage(err) }, 'no snapshot store: session snapshots are refused');
    }
  }

  /** At the broker's close: the records die with it, so do the layers (its containers are gone). */
  async close(): Promise<void> {
    await fs.promises.rm(this.hostDir, { recursive: true, force: true }).catch(() => undefined);
  }

  async capture(shell: SessionShell, id: string): Promise<{ bytes: number }> {
    if (this.unavailable !== null) throw new SnapshotsUnsupportedError(this.unavailable);
    if (!(shell instanceof DockerShell) || !shell.isolated) throw new SnapshotsUnsupportedError("this session's container does not isolate its sessions (see /health's isolation)");
    const answer = await shell.askInit(`snap ${id}`, CAPTURE_TIMEOUT_MS);
    if (answer === null) throw new SnapshotsUnsupportedError('this session was not started through the session init (the setup script keeps no layer to copy)');
    const bytes = /^ok (\d+)$/.exec(answer)?.[1];
    if (bytes === undefined) {
      await this.remove(id);
      throw new BackendError(`the session's init could not take the snapshot (${answer})`);
    }
    return { bytes: Number(bytes) };
  }

  async startFrom(workdir: string, layers: readonly string[]): Promise<void> {
    if (this.unavailable !== null) throw new SnapshotsUnsupportedError(this.unavailable);
    const lowers = layers.map((id) => `${SNAPSHOT_MOUNT}/${id}/u`).join(':');
    await fs.promises.writeFile(this.startFile(workdir), `${lowers}\n${SNAPSHOT_MOUNT}/${layers[0]}/w\n`, { mode: 0o600 });
  }

  async started(workdir: string): Promise<void> {
    await fs.promises.rm(this.startFile(workdir), { force: true });
  }

  async remove(id: string): Promise<void> {
    if (!/^[0-9a-z][0-9a-z.-]*$/.test(id)) return;
    await fs.promises.rm(path.join(this.hostDir, id), { recursive: true, force: true });
  }

  private startFile(workdir: string): string {
    const id = sessionWorkdirId(workdir);
    if (id === null) throw new BackendError(`not a lease's working directory: ${workdir}`);
    return path.join(this.hostDir, 'at', id);
  }
}

/** A pool container's create options with the store bound in (`bind` null: no pipes, so no isolation and no store). */
export function withSnapshotStore<T extends { HostConfig?: { Binds?: string[] } }>(options: T, bind: string | null): T {
  if (bind === null || !options.HostConfig?.Binds) return options;
  return { ...options, HostConfig: { ...options.HostConfig, Binds: [...options.HostConfig.Binds, bind] } };
}
