/**
 * Slot rebuild: prepares a slot for its next lease (its session id and working directory taken from
 * its container's stock of directories made ahead, a fresh shell started in it) after a release (recycling the old shell in place when the
 * backend can), after its shell died, or after its container was replaced, so that an acquire finds
 * it ready; marks a slot BROKEN and retries it with backoff. Leasing (pool.ts) and the container
 * fleet (containerFleet.ts) call it.
 */
import type PQueue from 'p-queue';
import { BashSession, type BashSessionTimings } from '../session/bashSession';
import { sessionWorkdir, type SessionBackend, type ShellProcess, type WorkdirFile } from '../ports/backend';
import type { Lease, Slot } from './slot';
import { SessionState, type SessionStates } from './states';
import type { PoolObserver } from '../ports/observer';
import { SessionBrokenError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';
import { WorkdirStock } from './workdirStock';

const REBUILD_BACKOFF_MAX_MS = 30_000;
/** How long the `cd` into a working directory may take (a starved container is slow). */
export const CHANGE_DIRECTORY_TIMEOUT_MS = 10_000;

/** How long one of a prepared pool's startup commands may run before the slot is marked BROKEN. */
export const PREPARE_COMMAND_TIMEOUT_MS = 300_000;

/**
 * A prepared pool's preparation (BROKER_POOLS): files written into the next lease's directory and
 * commands run in its fresh shell, before the slot becomes AVAILABLE, at every rebuild.
 */
export interface SlotPreparation {
  files: readonly WorkdirFile[];
  startupCommands: readonly string[];
}

/** What the rebuilder needs of the pool around it. */
export interface RebuildHooks {
  isClosing(): boolean;
  /** The slot is AVAILABLE with a fresh shell: hand it to a waiter or the free list. */
  onAvailable(slot: Slot): void;
  /** A shell died on its own: its container may be dead too, worth a health check now. */
  onShellDied(): void;
}

export class SlotRebuilder {
  /** The next leases' ids and working directories, made ahead per container. */
  private readonly workdirs: WorkdirStock;

  constructor(
    private readonly backend: SessionBackend,
    private readonly states: SessionStates<Slot>,
    /** The cleanup workers: rebuilds run there, at most `cleanupWorkers` at once. */
    private readonly workers: PQueue,
    private readonly timings: BashSessionTimings,
    private readonly observer: PoolObserver,
    private readonly hooks: RebuildHooks,
    private readonly preparation: SlotPreparation = { files: [], startupCommands: [] },
  ) {
    this.workdirs = new WorkdirStock(backend);
  }

  /** Queues a rebuild of `slot`; `workdir` is the released lease's working directory, to remove (in the background). */
  schedule(slot: Slot, workdir: string | null): Promise<void> {
    return this.workers.add(() => this.rebuild(slot, workdir));
  }

  /**
   * Prepares `slot` for its next lease: chooses that lease's session id, makes its working directory,
   * and gives the slot a fresh shell in it (the old one recycled in place, killing everything its
   * lease started, or a new one). The old lease's directory is removed in the background. Ends
   * AVAILABLE with `preparedId` set, or BROKEN with a retry.
   */
  private async rebuild(slot: Slot, workdir: string | null): Promise<void> {
    if (slot.rebuilding) return;
    if (this.states.has(slot) && slot.state !== SessionState.CLEANING && slot.state !== SessionState.BROKEN) return;
    slot.rebuilding = true;
    const startedMs = performance.now();
    let reused: ShellProcess | null = null;
    let nextDir: string | null = null;
    try {
      const old = slot.session;
      slot.session = null;
      const container = slot.container;
      // Queued first: on Docker the removals and the creation below go out as one fs-lane command.
      this.discardWorkdirs(slot, workdir);
      let nextId: string | null = null;
      let made: Promise<void> | null = null;
      if (!this.hooks.isClosing() && container.ref && container.healthy) {
        // Usually made long ago, with a batch of its container's next directories (workdirStock.ts).
        ({ id: nextId, dir: nextDir, made } = this.workdirs.take(container, container.ref));
        // A prepared pool's files go into it (prepareWorkdir takes a directory that exists).
        if (this.preparation.files.length > 0) {
          const dir = nextDir;
          const ref = container.ref;
          made = made.then(() => this.backend.prepareWorkdir(ref, dir, this.preparation.files));
        }
        made.catch(() => undefined); // awaited below; a shell recycled meanwhile waits for it too
      }
      reused = old ? await this.recycleShell(old, nextDir, made) : null;
      if (this.hooks.isClosing() || !container.ref || !container.healthy || !made || !nextDir || !nextId) {
        // A shell recycled just before the pool closed or the container failed is no one's: close it.
        await reused?.close();
        if (this.hooks.isClosing()) return;
        throw new Error(container.unhealthyReason ?? 'container is not running');
      }
      await made;
      const shell = reused ?? (await this.backend.openShell(container.ref, { slotId: slot.slotId, workdir: nextDir }));
      const session = new BashSession(shell, this.timings);
      slot.session = session;
      session.onDeath((reason) => this.onSessionDeath(slot, session, reason));
      // A recycled bash ran the framing's init from its rc file, in nextDir; a new one needs both.
      if (!reused) await this.startIn(session, nextDir);
      await this.runStartupCommands(session);
      if (this.hooks.isClosing()) return;
      slot.failures = 0;
      slot.preparedId = nextId;
      if (this.states.has(slot)) this.states.move(slot, SessionState.AVAILABLE);
      else this.states.add(slot, SessionState.AVAILABLE);
      if (workdir) this.observer.cleaned(performance.now() - startedMs, true);
      this.hooks.onAvailable(slot);
    } catch (err) {
      if (workdir) this.observer.cleaned(performance.now() - startedMs, false);
      // Not given to a session: close it (a bash, or a docker exec, would leak).
      if (reused && slot.session?.shell !== reused) await reused.close().catch(() => undefined);
      if (nextDir) slot.orphanWorkdirs.push(nextDir); // it may have been made: the retry removes it
      slot.failures++;
      // Its message may name nextDir: harmless, that id is dropped and never leased.
      logger.warn({ slot: slot.slotId, err: errorMessage(err), failures: slot.failures }, 'could not give the slot a shell');
      this.markBroken(slot, `could not start a shell: ${errorMessage(err)}`);
    } finally {
      slot.rebuilding = false;
    }
  }

  /**
   * A leased slot's shell replaced by a new one in the lease's directory (a view started from a
   * snapshot, core/snapshots/): the old one closed first. Its death breaks the lease as any shell's
   * does; so does a failure to start it.
   */
  async reopen(lease: Lease): Promise<BashSession> {
    const slot = lease.slot;
    const ref = slot?.container.ref;
    if (!slot || !ref) throw new SessionBrokenError(lease.id, lease.brokenReason ?? 'no shell');
    const old = slot.session;
    slot.session = null;
    await old?.close();
    try {
      const session = new BashSession(await this.backend.openShell(ref, { slotId: slot.slotId, workdir: lease.workdir }), this.timings);
      slot.session = session;
      session.onDeath((reason) => this.onSessionDeath(slot, session, reason));
      await this.startIn(session, lease.workdir);
      return session;
    } catch (err) {
      if (slot.lease === lease) this.markBroken(slot, `could not start a shell: ${errorMessage(err)}`);
      throw err;
    }
  }

  /** A new shell: the framing's init, then into its lease's directory (one round trip each). */
  private async startIn(session: BashSession, dir: string): Promise<void> {
    await session.start();
    const r = await session.changeDirectory(dir, CHANGE_DIRECTORY_TIMEOUT_MS);
    if (r.returnCode !== 0) throw new Error(`could not enter its working directory (${r.timedOut ? 'timed out' : `status ${r.returnCode}`})`);
  }

  /** A prepared pool's startup commands, in order; one that fails or times out fails the rebuild. */
  private async runStartupCommands(session: BashSession): Promise<void> {
    for (const [index, command] of this.preparation.startupCommands.entries()) {
      const r = await session.execute(command, { timeoutMs: PREPARE_COMMAND_TIMEOUT_MS, maxOutputBytes: 64 * 1024 });
      if (r.returnCode !== 0 || r.timedOut) {
        const why = r.timedOut ? `timed out after ${PREPARE_COMMAND_TIMEOUT_MS / 1000} s` : `exited ${r.returnCode}`;
        throw new Error(`startup_commands[${index}] ${why}: ${r.stderr.trim().slice(-200)}`);
      }
    }
  }

  /**
   * Removes, without waiting, the last lease's directory, those of broken leases, and the prepared
   * one of a slot whose shell died before any lease took it. Kept for later when the container is
   * being replaced (no ref): the local backend's directories outlive their "container".
   */
  private discardWorkdirs(slot: Slot, workdir: string | null): void {
    const dirs = [...slot.orphanWorkdirs];
    if (workdir) dirs.push(workdir);
    if (slot.preparedId) dirs.push(sessionWorkdir(slot.preparedId));
    slot.preparedId = null;
    const ref = slot.container.ref;
    slot.orphanWorkdirs = ref ? [] : dirs;
    if (!ref) return;
    for (const dir of dirs) {
      this.backend.removeWorkdir(ref, dir).catch((err: unknown) => {
        logger.warn({ slot: slot.slotId, err: errorMessage(err) }, 'could not remove a working directory (the backend tries again later)');
      });
    }
  }

  /**
   * The old session's process made pristine in place, in `cwd` once `cwdReady`, when its backend
   * can; else it is closed (no cwd: the container cannot take a shell now).
   */
  private async recycleShell(old: BashSession, cwd: string | null, cwdReady: Promise<void> | null): Promise<ShellProcess | null> {
    if (cwd && cwdReady && old.alive && !old.busy && old.shell.recycle) {
      const inPlace = await old.shell.recycle(cwd, cwdReady).catch(() => false);
      this.observer.recycled(inPlace);
      if (inPlace) return old.shell;
    }
    await old.close();
    return null;
  }

  /** A shell died on its own (killed, exited, or unrecoverable after a timeout). */
  private onSessionDeath(slot: Slot, session: BashSession, reason: string): void {
    if (slot.session !== session || this.hooks.isClosing()) return;
    if (slot.state === SessionState.CLEANING || slot.state === SessionState.BROKEN) return;
    logger.warn({ slot: slot.slotId, reason }, 'session shell died');
    this.markBroken(slot, reason);
    this.hooks.onShellDied(); // a dead shell often means a dead container: look now, not at the next tick
  }

  /** Moves a slot to BROKEN (its lease, if any, learns why) and schedules its rebuild. */
  markBroken(slot: Slot, reason: string): void {
    const lease = slot.lease;
    if (lease) {
      lease.brokenReason = reason;
      lease.end();
      lease.slot = null;
      slot.lease = null;
      slot.orphanWorkdirs.push(lease.workdir);
    }
    // After the slot's state is settled: the listener may take a new slot at once.
    const told = lease?.onBroken;
    if (lease) lease.onBroken = null;
    if (!this.states.has(slot)) {
      this.states.add(slot, SessionState.BROKEN);
    } else if (slot.state !== SessionState.BROKEN) {
      this.states.move(slot, SessionState.BROKEN);
    }
    this.observer.broken(reason);
    told?.(reason);
    if (this.hooks.isClosing() || slot.container.replacing) return;
    const backoffMs = Math.min(REBUILD_BACKOFF_MAX_MS, 250 * 2 ** Math.max(0, slot.failures - 1));
    setTimeout(() => {
      if (!this.hooks.isClosing() && slot.state === SessionState.BROKEN && !slot.container.replacing) {
        void this.schedule(slot, null);
      }
    }, slot.failures === 0 ? 0 : backoffMs).unref();
  }
}
