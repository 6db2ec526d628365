/**
 * A sandbox, whatever claimed it: a slot of a shared container (a pool lease, a workspace, a
 * lifecycle sandbox served warm) or a whole container (a lifecycle sandbox of its own, a sandbox
 * group's member, a task sandbox). Each kind claims and dresses it its own way; all of them are
 * found by id in one SandboxDirectory (sandboxDirectory.ts), and every per-sandbox API (execd's
 * commands, files and metrics) acts on the handle it gives, never on the kind.
 */
import type { SandboxHandle } from './sandboxHandle';
import type { SessionBackend } from '../ports/backend';
import type { ContainerShells } from '../ports/containers';
import { NotSupportedError } from '../../common/errors';

/** Who claimed it: the pool API, a workspace, the lifecycle API, a sandbox group, a task. */
export type SandboxKind = 'pool' | 'workspace' | 'lifecycle' | 'group' | 'task';

/** What a per-sandbox API can reach in it. */
export interface SandboxCapabilities {
  /** A shell that execd's commands, sessions and code contexts run in (through its handle's backend). */
  readonly shell: boolean;
  /** Files that execd's file routes and metrics reach (through its handle's backend). */
  readonly files: boolean;
}

/** Both: a sandbox whose container the broker's backend serves shells in. */
export const SHELL_AND_FILES: SandboxCapabilities = { shell: true, files: true };
/** Neither: a container whose shell only its own API reaches (a group member's or a task's where its backend serves no shells). */
export const OWN_API_ONLY: SandboxCapabilities = { shell: false, files: false };

export interface Sandbox {
  /** Unique among live sandboxes: the id in `/sandboxes/{id}/...` for the kinds execd serves. */
  readonly id: string;
  readonly kind: SandboxKind;
  readonly capabilities: SandboxCapabilities;
  /**
   * Aborts when the sandbox ends (released, reclaimed, deleted, failed). Read it only where it is
   * needed: a pool lease makes its signal on first read (leases are many, and most are never watched).
   */
  readonly ended: AbortSignal;
  /**
   * Where it is now, for a per-sandbox API, or the error that API's caller must see (a paused
   * lifecycle sandbox: 409; a broken lease: 410). Called per request: a workspace's place moves.
   */
  handle(): SandboxHandle;
  /**
   * A line about it for the dashboard (its state, where it runs). Absent: it has nothing of its own
   * to say (a pool lease: the dashboard lists it among the leases).
   */
  describe?(): string;
}

/**
 * A whole container of its own that a helper started (a group member's, a task's), its own entry
 * process in it (the group's forwarder, the task's daemon). Where its backend serves shells in it
 * (`shells`), the per-sandbox APIs reach it as any other sandbox: unconfined (the container is its
 * own), its commands starting in its working directory. Without, it is listed and found by id but
 * never handed to them: only its own API reaches it.
 */
export function containerSandbox(
  id: string,
  kind: 'group' | 'task',
  ended: AbortSignal,
  shells: ContainerShells | null,
  backend: SessionBackend | null,
  describe?: () => string,
): Sandbox {
  if (!shells || !backend) {
    const handle = (): never => {
      throw new NotSupportedError(`the ${kind} sandbox ${id} serves no shell to the per-sandbox APIs: its own API reaches it`);
    };
    return { id, kind, capabilities: OWN_API_ONLY, ended, handle, describe };
  }
  // The container's name tags the processes execd starts (an id may hold a '/': a group member's).
  const handle: SandboxHandle = { id, slotId: shells.ref.name, container: shells.ref, root: shells.workdir, confined: false, ended, backend };
  return { id, kind, capabilities: SHELL_AND_FILES, ended, handle: () => handle, describe };
}
