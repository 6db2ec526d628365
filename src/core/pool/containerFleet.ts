/**
 * The container fleet: starts the pool's containers (a bounded number at once), fills each with
 * shells through the slot rebuilder, watches them (ContainerMonitor) and replaces one that fails.
 */
import PQueue from 'p-queue';
import type { SessionBackend } from '../ports/backend';
import { ContainerEntry, Slot } from './slot';
import { SessionState } from './states';
import { ContainerMonitor } from './containerMonitor';
import type { SlotRebuilder } from './slotRebuilder';
import type { PoolObserver } from '../ports/observer';
import { WarmupProgress, type WarmupSnapshot } from './warmupProgress';
import { errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';

/** The fleet's part of the configuration (BROKER_CONTAINERS, BROKER_SESSIONS_PER_CONTAINER, ...: config.ts). */
export interface FleetOptions {
  containers: number;
  sessionsPerContainer: number;
  healthCheckIntervalMs: number;
  /** How many containers start at once during warm-up and replacement. */
  startConcurrency: number;
}

export class ContainerFleet {
  readonly containers: ContainerEntry[] = [];
  private readonly starters: PQueue;
  private readonly monitor: ContainerMonitor;
  private warmup: WarmupProgress | null = null;

  constructor(
    private readonly backend: SessionBackend,
    options: FleetOptions,
    private readonly rebuilder: SlotRebuilder,
    private readonly isClosing: () => boolean,
    private readonly observer: PoolObserver,
  ) {
    this.starters = new PQueue({ concurrency: options.startConcurrency });
    this.monitor = new ContainerMonitor(backend, this.containers, options.healthCheckIntervalMs, (entry, reason) =>
      this.onContainerFailed(entry, reason),
    );
    for (let c = 0; c < options.containers; c++) {
      const entry = new ContainerEntry(c);
      for (let s = 0; s < options.sessionsPerContainer; s++) entry.slots.push(new Slot(`c${c}s${s}`, entry));
      this.containers.push(entry);
    }
  }

  /** Starts every container and fills it with shells; then the health checks begin. */
  async start(): Promise<void> {
    const warmup = new WarmupProgress(this.containers.reduce((n, c) => n + c.slots.length, 0));
    this.warmup = warmup;
    try {
      await Promise.all(this.containers.map((entry) => this.startContainer(entry, warmup)));
    } finally {
      warmup.finish();
    }
    this.monitor.start();
  }

  /**
   * `count` more containers (an image pool's growth, core/images/): each is started and filled as a
   * warm-up's are, the health checks watch them from then on. Resolves once each was started or
   * failed to (`booted`), and again once its shells were tried (`filled`).
   */
  add(count: number, sessionsPerContainer: number): { booted: Promise<ContainerEntry[]>; filled: Promise<void> } {
    const entries: ContainerEntry[] = [];
    for (let i = 0; i < count; i++) {
      const entry = new ContainerEntry(this.containers.length);
      for (let s = 0; s < sessionsPerContainer; s++) entry.slots.push(new Slot(`c${entry.index}s${s}`, entry));
      this.containers.push(entry);
      entries.push(entry);
    }
    const booting = entries.map((entry) => this.bootContainer(entry).then(() => entry));
    const booted = Promise.all(booting);
    const filled = Promise.all(booting.map(async (b) => {
      const entry = await b;
      if (entry.healthy && !this.isClosing()) await this.fillContainer(entry);
    })).then(() => undefined);
    return { booted, filled };
  }

  /** The first fill's progress while it runs; null before and after. */
  get warmupProgress(): WarmupSnapshot | null {
    return this.warmup?.running ? this.warmup.snapshot() : null;
  }

  /** A shell died: its container may have, too. */
  checkSoon(): void {
    this.monitor.checkSoon();
  }

  stopHealthChecks(): void {
    this.monitor.stop();
  }

  /** Drops the container starts not begun yet; resolves once none is running. */
  settleStarts(): Promise<void> {
    this.starters.clear();
    return this.starters.onIdle();
  }

  /** Removes every container (at close, after their sessions were closed). */
  async removeAll(): Promise<void> {
    await Promise.all(this.containers.map((c) => (c.ref ? this.backend.removeContainer(c.ref).catch(() => undefined) : undefined)));
  }

  /**
   * Only the engine's part of a container start holds a starter: connecting to it and its shells
   * happen meanwhile, so the next container starts at once (Docker's start rate sets the warm-up).
   */
  private async startContainer(entry: ContainerEntry, warmup: WarmupProgress): Promise<void> {
    await this.bootContainer(entry);
    await this.fillContainer(entry, warmup);
  }

  /** Starts the container itself; on failure the entry stays unhealthy and the monitor retries. */
  private async bootContainer(entry: ContainerEntry): Promise<void> {
    try {
      const ref = await this.starters.add(() => this.backend.containers.start({ kind: 'pool', index: entry.index }));
      try {
        await this.backend.connectContainer?.(ref);
      } catch (err) {
        await this.backend.removeContainer(ref).catch(() => undefined);
        throw err;
      }
      if (this.isClosing()) {
        // close() may have collected the containers to remove before this one was connected.
        await this.backend.removeContainer(ref).catch(() => undefined);
        return;
      }
      entry.ref = ref;
      entry.healthy = true;
      entry.unhealthyReason = null;
    } catch (err) {
      entry.healthy = false;
      entry.unhealthyReason = errorMessage(err);
      logger.error({ container: entry.index, err: errorMessage(err) }, 'container failed to start');
    }
  }

  /** Gives every slot of the container a shell (those that fail go BROKEN and retry with backoff). */
  private async fillContainer(entry: ContainerEntry, warmup?: WarmupProgress): Promise<void> {
    await Promise.all(
      entry.slots.map(async (slot) => {
        await this.rebuilder.schedule(slot, null);
        // Leased already (IN_USE) counts as ready: an acquire may take a slot the moment it is AVAILABLE.
        warmup?.settled(slot.session !== null && slot.state !== SessionState.BROKEN);
      }),
    );
  }

  /**
   * A fresh container for a slot released by its lease (a pool with `freshContainer`): the old one
   * is removed, a new one started and its slots rebuilt (they wait CLEANING meanwhile, so /health
   * counts them as coming back, not broken). Concurrent calls for one container start one.
   */
  async renew(entry: ContainerEntry): Promise<void> {
    if (entry.replacing) return;
    entry.replacing = true;
    entry.healthy = false;
    entry.unhealthyReason = 'being replaced by a fresh container after a release';
    try {
      if (entry.ref) await this.backend.removeContainer(entry.ref).catch(() => undefined);
      entry.ref = null;
      if (!this.isClosing()) await this.bootContainer(entry);
    } finally {
      entry.replacing = false;
    }
    if (this.isClosing()) return;
    if (entry.healthy) await this.fillContainer(entry);
    else for (const slot of entry.slots) this.rebuilder.markBroken(slot, `container failed to start: ${entry.unhealthyReason}`);
  }

  /**
   * Replaces container `index` now, as if it had failed (an operator's action): its leases break
   * (their holders get 410), its slots are rebuilt in the new container. False: it is being replaced already.
   */
  replace(index: number, reason: string): boolean {
    const entry = this.containers[index];
    if (!entry) throw new RangeError(`no container ${index}`);
    if (entry.replacing) return false;
    void this.onContainerFailed(entry, reason);
    return true;
  }

  /**
   * Replaces a failed container. `replacing` stays set until the new container runs, so neither an
   * overlapping monitor pass nor a slot's retry starts a second one (which would be orphaned); the
   * slots are filled after, when a failed rebuild may schedule its own retry again.
   */
  private async onContainerFailed(entry: ContainerEntry, reason: string): Promise<void> {
    if (entry.replacing) return;
    entry.replacing = true;
    logger.error({ container: entry.index, reason }, 'container unhealthy: replacing it');
    this.observer.containerReplaced(reason);
    entry.healthy = false;
    entry.unhealthyReason = reason;
    try {
      for (const slot of entry.slots) {
        if (slot.state !== SessionState.BROKEN && slot.state !== SessionState.CLEANING) this.rebuilder.markBroken(slot, `container failed: ${reason}`);
      }
      if (entry.ref) await this.backend.removeContainer(entry.ref).catch(() => undefined);
      entry.ref = null;
      if (!this.isClosing()) await this.bootContainer(entry);
    } finally {
      entry.replacing = false;
      entry.replaced = { count: entry.replaced.count + 1, lastReason: reason };
    }
    if (!this.isClosing() && entry.healthy) await this.fillContainer(entry);
  }
}
