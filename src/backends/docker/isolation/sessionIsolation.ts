/**
 * Which of the backend's containers isolate their sessions (isolationScript.ts), and what each
 * session shell's spawn asks for: its lease's working directory, or, for an extra shell of a
 * session (execd's), the namespaces of that session's bash. A container that cannot isolate (no
 * pipes, an image without the tools, an engine that refuses the mounts) serves its sessions
 * unisolated, and says so loudly: in the log once per reason, and in /health.
 */
import type { IsolationConfig } from '../../../config/isolationConfig';
import type { ContainerRef, IsolationReport, NetworkReport, OpenShellOptions, SessionLimitsReport } from '../../../core/ports/backend';
import { logger } from '../../../common/logger';
import type { ChannelRequest, SessionNetworkMode } from '../shells/channel';
import type { FifoSpawner } from '../shells/fifoSpawner';
import type { SessionEgress } from './sessionEgress';

/** A lease's working directory (sessionWorkdir): the only directory bound into a session from its container. */
const WORKDIR = /^\/tmp\/s\/([0-9a-z][0-9a-z.-]*)\/?$/;

/** The id of a lease's working directory `/tmp/s/<id>`, or null for any other path. */
export function sessionWorkdirId(workdir: string): string | null {
  return WORKDIR.exec(workdir)?.[1] ?? null;
}

/** What a session's own shell must tell of itself for its extra shells and file routes to join it. */
export interface IsolatedShell {
  readonly containerPid: number;
  readonly alive: boolean;
  /** The working directory id its view binds in now: a shell reused in place moves to its next lease's. */
  readonly workdirId: string | null;
  /** Its network changed during the lease (isolation/sessionNetwork.ts): it is not reused in place. */
  networkChanged: boolean;
  /** Its network now (sessionNetwork.ts). */
  network: SessionNetworkMode;
  /** Its bash's host pid; null: unknown. */
  readonly hostPid: number | null;
  /** Its egress rules (sessionEgress.ts), once a change gave it some. */
  egress: SessionEgress | null;
}

export class SessionIsolation {
  /** Per container: whether it isolates. */
  private readonly containers = new Map<string, boolean>();
  /** `<container id>/<slot id>` → the session shell of that slot, while it is its newest. */
  private readonly shells = new Map<string, IsolatedShell>();
  private readonly refusalsLogged = new Set<string>();
  private lastRefusal: string | null = null;
  private rewinds = 0;

  constructor(
    private readonly config: IsolationConfig,
    /** The sessions' networks (sessionNetwork.ts), reported beside. */
    private readonly network?: () => NetworkReport,
    /** The sessions' memory and CPU limits (cgroups/sessionUsage.ts), reported beside. */
    private readonly limits?: () => SessionLimitsReport,
  ) {
    this.rewound = config.rewind === false ? undefined : () => void this.rewinds++;
  }

  /** Records whether a connected container isolates its sessions; logs why not, once per reason. */
  check(ref: ContainerRef, spawner: FifoSpawner | null): boolean {
    if (!this.config.enabled) return false;
    const refusal = spawner ? spawner.isolationRefusal : 'it needs the pipe transport (the engine on this host), and this container uses docker exec';
    const isolates = spawner?.isolates === true;
    this.containers.set(ref.id, isolates);
    if (!isolates) {
      const why = refusal ?? 'its entrypoint did not say';
      this.lastRefusal = why;
      if (!this.refusalsLogged.has(why)) {
        this.refusalsLogged.add(why);
        logger.error({ container: ref.name, reason: why }, 'SESSIONS ARE NOT ISOLATED: BROKER_SESSION_ISOLATION is on, but this container cannot give its sessions filesystems of their own; they share its files, as with isolation off');
      }
    }
    return isolates;
  }

  /** The spawn's `isolated` for a shell of an isolating container. */
  request(containerId: string, options: OpenShellOptions): NonNullable<ChannelRequest['isolated']> {
    if (options.companionOf !== undefined) {
      const owner = this.shells.get(`${containerId}/${options.companionOf}`);
      // A session whose shell is gone has no view to join: the extra shell gets a fresh one.
      return { workdirId: null, joinPid: owner?.alive ? owner.containerPid : 0 };
    }
    return { workdirId: options.workdir === undefined ? null : sessionWorkdirId(options.workdir), joinPid: 0 };
  }

  /**
   * The spawn of a workspace terminal of slot `slotId` (its shell and its window's `stty`): in the
   * namespaces of the slot's session shell, which the workspace holds, so all its terminals share
   * that one view with its files routes. Null when that shell is gone: there is no view to open in
   * (the slot is lost, and the workspace moves to another).
   */
  terminal(containerId: string, slotId: string): NonNullable<ChannelRequest['isolated']> | null {
    const owner = this.shells.get(`${containerId}/${slotId}`);
    return owner?.alive ? { workdirId: null, joinPid: owner.containerPid } : null;
  }

  /** A session's own shell opened isolated: its slot's extra shells join it from now on. */
  opened(containerId: string, options: OpenShellOptions, shell: IsolatedShell): void {
    if (options.companionOf !== undefined) return;
    this.shells.set(`${containerId}/${options.slotId}`, shell);
  }

  /** The session shell of slot `slotId`, while it is its newest; null when there is none. */
  shellOf(containerId: string, slotId: string): IsolatedShell | null {
    return this.shells.get(`${containerId}/${slotId}`) ?? null;
  }

  /**
   * The container pid of the live session shell whose lease's working directory is `workdir`: the
   * file routes of that directory run in its mount namespace (files/sessionView.ts). Null: no live
   * session has it (the routes then use the container's view, where no session process can race them).
   */
  viewOf(containerId: string, workdir: string): number | null {
    const id = sessionWorkdirId(workdir);
    if (id === null) return null;
    for (const [key, shell] of this.shells) {
      if (key.startsWith(`${containerId}/`) && shell.workdirId === id && shell.alive) return shell.containerPid;
    }
    return null;
  }

  /**
   * Given to each isolated shell (shells/dockerShell.ts): it rolls a written view back in place at
   * release (isolation/sessionRewind.c) and calls this for each, to be counted in /health. Undefined
   * with BROKER_SESSION_REWIND=0: such a release starts a new session.
   */
  readonly rewound: (() => void) | undefined;

  forget(containerId: string): void {
    this.containers.delete(containerId);
    for (const key of this.shells.keys()) if (key.startsWith(`${containerId}/`)) this.shells.delete(key);
  }

  status(): IsolationReport {
    let isolated = 0;
    for (const isolates of this.containers.values()) if (isolates) isolated++;
    return {
      enabled: this.config.enabled,
      isolatedContainers: isolated,
      unisolatedContainers: this.containers.size - isolated,
      refusal: this.containers.size > isolated ? this.lastRefusal : null,
      diskBytesPerSession: this.config.diskBytes,
      sharedPaths: this.config.sharedPaths,
      rewoundReleases: this.rewinds,
      ...(this.network ? { network: this.network() } : {}),
      ...(this.limits ? { sessionLimits: this.limits() } : {}),
    };
  }
}
