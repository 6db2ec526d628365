/**
 * How the Docker backend reaches one container's shells: its control shell, the way a bash is opened
 * in it, and what its sessions get (cgroups of their own, filesystems of their own). A pool's and a
 * lifecycle sandbox's container get theirs when they connect; a group member's and a task's, over
 * docker exec, when their helper serves shells in them (ShellServing).
 */
import type { ContainerRef } from '../../../core/ports/container';
import type { ControlShell } from '../control/controlShell';
import type { ChannelOpener } from '../shells/channel';
import type { FifoSpawner } from '../shells/fifoSpawner';
import type { ContainerPids } from '../cgroups/sessionPids';
import type { ContainerUsage } from '../cgroups/sessionUsage';

export interface ContainerLink {
  control: ControlShell;
  openChannel: ChannelOpener;
  spawner: FifoSpawner | null;
  /** Per-session pids cgroups (sessionPids.ts); null when sessions share the container's limit. */
  pids: ContainerPids | null;
  /** Per-session cpuacct and memory cgroups (sessionUsage.ts); null where the facts say unknown. */
  usage: ContainerUsage | null;
  /** Whether its sessions get filesystems of their own (isolation/isolationScript.ts). */
  isolates: boolean;
  /**
   * Its control shell opened again, once the one it has died with its container's main process (a
   * task's daemon that crashed, started again in the same container): absent, a dead one stays dead.
   */
  reopen?: () => Promise<ControlShell>;
}

/**
 * What a helper (groups/, tasks/) asks of the backend for a container it started: serve execd's
 * shells, files and metrics in it as in the backend's own, with `control` as its control shell (and
 * `reopen` to open it again: ContainerLink). One control shell per container: a second one's
 * collection would take the first one's sessions (a group member's terminal) for escapees and kill
 * them. The returned function stops serving; it runs before the container goes.
 */
export type ShellServing = (ref: ContainerRef, control: ControlShell, reopen?: () => Promise<ControlShell>) => () => void;

/**
 * A container's control shell that is opened again on demand once it died, one reopening at a time;
 * closed, it stays closed (a reopening under way closes what it opened).
 */
export class ReopeningControl {
  private reopening: Promise<ControlShell> | null = null;
  private closed = false;

  private constructor(
    private current: ControlShell,
    private readonly openOne: () => Promise<ControlShell>,
  ) {}

  static async open(openOne: () => Promise<ControlShell>): Promise<ReopeningControl> {
    return new ReopeningControl(await openOne(), openOne);
  }

  get control(): ControlShell {
    return this.current;
  }

  reopen(): Promise<ControlShell> {
    this.reopening ??= (async () => {
      try {
        await this.current.close().catch(() => undefined);
        const next = await this.openOne();
        if (this.closed) await next.close().catch(() => undefined);
        else this.current = next;
        return next;
      } finally {
        this.reopening = null;
      }
    })();
    return this.reopening;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.current.close().catch(() => undefined);
  }
}
