/**
 * Where a backend keeps snapshots of sessions' views (docs/snapshots.md): a session's own writes
 * frozen as a layer, and new sessions started with such layers beneath their own. Core keeps the
 * records (core/snapshots/); the backend keeps the bytes. Only a backend that gives each session a
 * view of its own (Docker's per-lease isolation) has one.
 */
/** A session's ShellProcess (ports/backend.ts) as its backend opened it: the backend knows its own shells' kind. */
export type SessionShell = object;

export interface SnapshotLayers {
  /** How many snapshot layers one session's view may stack (a fork of a fork...): beyond, a snapshot is refused. */
  readonly maxDepth: number;
  /**
   * Freezes the view of the session whose shell is `shell` (its own writes, never its image's) and
   * its working directory into layer `id`, while no command of it runs. Resolves to the bytes the
   * layer holds. Throws SnapshotsUnsupportedError where that session has no view of its own.
   */
  capture(shell: SessionShell, id: string): Promise<{ bytes: number }>;
  /**
   * The next session shell opened for lease directory `workdir` starts from `layers` (newest first):
   * its view is the image, these layers read-only, and a fresh layer of its own; its working
   * directory holds the newest layer's copy. Until `started(workdir)`.
   */
  startFrom(workdir: string, layers: readonly string[]): Promise<void>;
  /** The start of `startFrom` is done (or failed): the next shell for `workdir` starts from the image. */
  started(workdir: string): Promise<void>;
  /** The layer's bytes are gone (no session may start from it any more). */
  remove(id: string): Promise<void>;
}
