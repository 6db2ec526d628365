/**
 * Slot rebuild: gives a slot a fresh shell after a release (recycling the old one in place when the
 * backend can), after its shell died, or after its container was replaced; marks a slot BROKEN and
 * retries it with backoff. Leasing (pool.ts) and the container fleet (containerFleet.ts) call it.
 */
import type PQueue from 'p-queue';
import { BashSession, type BashSessionTimings } from './bashSession';
import type { SessionBackend, ShellProcess } from './backend';
import type { Slot } from './slot';
import { SessionState, type SessionStates } from './states';
import type { PoolObserver } from './observer';
import { errorMessage } from '../common/errors';
import { logger } from '../common/logger';

const REBUILD_BACKOFF_MAX_MS = 30_000;

/** What the rebuilder needs of the pool around it. */
export interface RebuildHooks {
  isClosing(): boolean;
  /** The slot is AVAILABLE with a fresh shell: hand it to a waiter or the free list. */
  onAvailable(slot: Slot): void;
  /** A shell died on its own: its container may be dead too, worth a health check now. */
  onShellDied(): void;
}

export class SlotRebuilder {
  constructor(
    private readonly backend: SessionBackend,
    private readonly states: SessionStates<Slot>,
    /** The cleanup workers: rebuilds run there, at most `cleanupWorkers` at once. */
    private readonly workers: PQueue,
    private readonly timings: BashSessionTimings,
    private readonly observer: PoolObserver,
    private readonly hooks: RebuildHooks,
  ) {}

  /** Queues a rebuild of `slot`; `workdir` is the released lease's working directory, to remove. */
  schedule(slot: Slot, workdir: string | null): Promise<void> {
    return this.workers.add(() => this.rebuild(slot, workdir));
  }

  /**
   * Gives `slot` a fresh shell: closes the old one (killing everything its lease started), removes
   * the lease's working directory, opens a new shell. Ends AVAILABLE, or BROKEN with a retry.
   */
  private async rebuild(slot: Slot, workdir: string | null): Promise<void> {
    if (slot.rebuilding) return;
    if (this.states.has(slot) && slot.state !== SessionState.CLEANING && slot.state !== SessionState.BROKEN) return;
    slot.rebuilding = true;
    const startedMs = performance.now();
    let reused: ShellProcess | null = null;
    try {
      const old = slot.session;
      slot.session = null;
      const container = slot.container;
      reused = old ? await this.recycleShell(old, !this.hooks.isClosing() && container.healthy) : null;
      if (this.hooks.isClosing() || !container.ref || !container.healthy) {
        // A shell recycled just before the pool closed or the container failed is no one's: close it.
        await reused?.close();
        if (this.hooks.isClosing()) return;
        throw new Error(container.unhealthyReason ?? 'container is not running');
      }
      for (const dir of [workdir, slot.orphanWorkdir]) if (dir) await this.backend.removeWorkdir(container.ref, dir);
      slot.orphanWorkdir = null;
      const shell = reused ?? (await this.backend.openShell(container.ref, { slotId: slot.slotId }));
      const session = new BashSession(shell, this.timings);
      slot.session = session;
      session.onDeath((reason) => this.onSessionDeath(slot, session, reason));
      await session.start();
      if (this.hooks.isClosing()) return;
      slot.failures = 0;
      if (this.states.has(slot)) this.states.move(slot, SessionState.AVAILABLE);
      else this.states.add(slot, SessionState.AVAILABLE);
      if (workdir) this.observer.cleaned(performance.now() - startedMs, true);
      this.hooks.onAvailable(slot);
    } catch (err) {
      if (workdir) this.observer.cleaned(performance.now() - startedMs, false);
      // Not given to a session: close it (a bash, or a docker exec, would leak). The lease's workdir
      // is removed by the retry.
      if (reused && slot.session?.shell !== reused) await reused.close().catch(() => undefined);
      if (workdir) slot.orphanWorkdir ??= workdir;
      slot.failures++;
      logger.warn({ slot: slot.slotId, err: errorMessage(err), failures: slot.failures }, 'could not give the slot a shell');
      this.markBroken(slot, `could not start a shell: ${errorMessage(err)}`);
    } finally {
      slot.rebuilding = false;
    }
  }

  /** The old session's process made pristine in place when its backend can; else it is closed. */
  private async recycleShell(old: BashSession, wanted: boolean): Promise<ShellProcess | null> {
    if (wanted && old.alive && !old.busy && old.shell.recycle) {
      const inPlace = await old.shell.recycle().catch(() => false);
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
      lease.slot = null;
      slot.lease = null;
      slot.orphanWorkdir = lease.workdir;
    }
    if (!this.states.has(slot)) {
      this.states.add(slot, SessionState.BROKEN);
    } else if (slot.state !== SessionState.BROKEN) {
      this.states.move(slot, SessionState.BROKEN);
    }
    this.observer.broken(reason);
    if (this.hooks.isClosing() || slot.container.replacing) return;
    const backoffMs = Math.min(REBUILD_BACKOFF_MAX_MS, 250 * 2 ** Math.max(0, slot.failures - 1));
    setTimeout(() => {
      if (!this.hooks.isClosing() && slot.state === SessionState.BROKEN && !slot.container.replacing) {
        void this.schedule(slot, null);
      }
    }, slot.failures === 0 ? 0 : backoffMs).unref();
  }
}
