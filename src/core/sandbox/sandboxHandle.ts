/**
 * What the per-sandbox APIs (execd's commands, files and metrics) act on: where a sandbox
 * (sandbox.ts) is now, in a container. A pool lease and a workspace are a slot in a shared container
 * (its working directory); a lifecycle sandbox is that or a whole container of its own. Routers
 * resolve the id in their path to a handle through the SandboxDirectory and never see a lease, a
 * slot or a backend's internals.
 */
import type { ContainerRef, SessionBackend } from '../ports/backend';
import type { BashSession } from '../session/bashSession';

export interface SandboxHandle {
  /** The id in the route (`/sandboxes/{id}/execd/...`): a pool session's, a workspace's or a lifecycle sandbox's. */
  readonly id: string;
  /** The pool slot whose capacity it holds: tags the processes it starts (the kill on release finds them). */
  readonly slotId: string;
  readonly container: ContainerRef;
  /** Its working directory as the container sees it: relative paths resolve here, commands start here. */
  readonly root: string;
  /**
   * Whether paths must stay under `root` (403 otherwise). True where the container is shared with
   * other sandboxes or is the host itself (the local backend); false for a container of its own.
   */
  readonly confined: boolean;
  /**
   * Environment every process started for it must get beyond the container's own (a lifecycle
   * sandbox created with `env` and served from a warm container); absent: none.
   */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Aborts when this place ends (the sandbox released, reclaimed, broken, deleted; a workspace's slot
   * given up for another). Whatever a per-sandbox API started in it that its own release does not
   * reach (execd's shells and interpreters) is closed on it.
   */
  readonly ended: AbortSignal;
  /**
   * The backend its container belongs to (a named pool's own, or the broker's): every per-sandbox API
   * reaches the sandbox through it alone. Another backend does not know the container: it would take
   * it for one that does not isolate, and serve its files from the container's view rather than the
   * session's, where the sandbox's own commands write.
   */
  readonly backend: SessionBackend;
  /**
   * A started shell in `root` that is this sandbox's alone (a whole container's lease shell, its env
   * exported): execd borrows it as a command runner, so the first command opens no shell. Its owner
   * closes it (the lease's release kills what it started); execd never does. Absent: none.
   */
  readonly ownShell?: BashSession;
}
