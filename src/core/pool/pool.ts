/**
 * The session pool: leases warm shells to clients and runs their commands. Released and broken
 * slots are rebuilt on background workers, each prepared for its next lease (slotRebuilder.ts);
 * containers are started, watched and replaced by the fleet (containerFleet.ts); free slots and
 * waiting acquires meet in slotQueue.ts; a lease's directory, startup commands and commands run in
 * leaseRunner.ts; what the pool takes and gives is in poolTypes.ts. It knows no HTTP and no
 * container technology: it talks to a SessionBackend and reports to a PoolObserver.
 */
import PQueue from 'p-queue';
import { BashSession, type BashSessionTimings, DEFAULT_TIMINGS, type ExecResult } from '../session/bashSession';
import type { IsolationReport, SessionBackend } from '../ports/backend';
import { type ContainerEntry, Lease, type Slot } from './slot';
import { SessionState, SessionStates } from './states';
import { ContainerNotFoundError, LeaseHeldError, type AcquireRequest, type AcquireResult, type ExecuteRequest, type GroupAcquireRequest, type PoolStats, type TakenSlot } from './poolTypes';
import { SlotQueue } from './slotQueue';
import type { SandboxHandle } from '../sandbox/sandboxHandle';
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';
import { type PoolObserver, NOOP_OBSERVER } from '../ports/observer';
import { LeaseBook } from './leaseBook';
import { SlotRebuilder, type SlotPreparation } from './slotRebuilder';
import { LeaseRunner } from './leaseRunner';
import { ContainerFleet, type FleetOptions } from './containerFleet';
import { ReclaimCounts, type ReclaimReason } from './leaseTtl';
import { AcquireWaits, acquireDeadline } from './acquireWaits';
import { checkPrepareRetry } from './prepareRetry';
import { acquireGroup, type GroupHost } from './groupAcquire';
import type { JournalLimits, TrajectoryRecord } from './leaseJournal';
import { ShuttingDownError } from '../../common/errors';
import type { WarmupSnapshot } from './warmupProgress';
import { logger } from '../../common/logger';
import { delay } from '../../common/delay';

export { StartupFailedError, type AcquireRequest, type AcquireResult, type ExecuteRequest, type TakenSlot } from './poolTypes';

/** The pool's part of the configuration (config/config.ts documents each), and the session timings. */
export type PoolOptions = FleetOptions & {
  acquireTimeoutMs: number;
  cleanupWorkers: number;
  sessionIdleTimeoutMs: number;
  defaultCommandTimeoutMs: number;
  /** Per stream and per execute; beyond it the head and tail are kept. */
  maxOutputBytes: number;
  timings?: BashSessionTimings;
  /** A prepared pool's files and startup commands, run at every rebuild (BROKER_POOLS). */
  preparation?: SlotPreparation;
  /** Each release replaces the slot's container (a pool of whole containers, BROKER_POOLS). */
  freshContainer?: boolean;
  /** The longest `lease_ttl` an acquire may ask for (longer ones are capped); default: the idle timeout. */
  maxLeaseTtlMs?: number;
  journal?: JournalLimits;
  /** Each ended lease's journal, when trajectories are kept (trajectoryFile.ts). */
  onLeaseEnded?: (record: TrajectoryRecord) => void;
  /** The broker's directory of live sandboxes: each lease is one while it lives. */
  sandboxes?: SandboxDirectory;
};

/** How often leases are checked for their idle timeout and lease_ttl, at most. */
const RECLAIM_TICK_MS = 250;

/**
 * Leasing: acquire (queue, retries), execute, release, idle reclaim and close. A lease's shell and
 * working directory are the LeaseRunner's; slot rebuilds, the SlotRebuilder's; containers and their
 * health, the ContainerFleet's.
 */
export class SessionPool {
  readonly states = new SessionStates<Slot>();
  private readonly leases = new LeaseBook();
  private readonly slots: SlotQueue;
  private readonly workers: PQueue;
  private readonly rebuilder: SlotRebuilder;
  private readonly fleet: ContainerFleet;
  private readonly reclaims = new ReclaimCounts();
  private readonly waits: AcquireWaits;
  private readonly runner: LeaseRunner;
  private idleTimer: NodeJS.Timeout | null = null;
  private closing = false;
  private closePromise: Promise<void> | null = null;

  constructor(
    private readonly backend: SessionBackend,
    private readonly options: PoolOptions,
    private readonly observer: PoolObserver = NOOP_OBSERVER,
  ) {
    this.slots = new SlotQueue();
    this.waits = new AcquireWaits(observer);
    this.workers = new PQueue({ concurrency: options.cleanupWorkers });
    const isClosing = (): boolean => this.closing;
    this.rebuilder = new SlotRebuilder(backend, this.states, this.workers, options.timings ?? DEFAULT_TIMINGS, observer, {
      isClosing,
      onAvailable: (slot) => this.offer(slot),
      onShellDied: () => this.fleet.checkSoon(),
    }, options.preparation);
    this.fleet = new ContainerFleet(backend, options, this.rebuilder, isClosing, observer);
    this.runner = new LeaseRunner(backend, this.states, this.leases, options, observer, (id) => this.release(id, 'released'));
  }

  get containers(): readonly ContainerEntry[] {
    return this.fleet.containers;
  }

  /** Sessions its containers hold (an image pool's grow as it does). */
  get targetSessions(): number {
    return this.fleet.containers.length * this.options.sessionsPerContainer;
  }

  get sessionsPerContainer(): number {
    return this.options.sessionsPerContainer;
  }

  /**
   * `count` more containers (an image pool's growth): resolves once they started or failed to, with
   * the reason of the first that failed (null: all run; their shells come up in the background).
   */
  async grow(count: number): Promise<string | null> {
    if (this.closing) throw new ShuttingDownError();
    const { booted, filled } = this.fleet.add(count, this.options.sessionsPerContainer);
    void filled.catch(() => undefined);
    const entries = await booted;
    return entries.find((e) => !e.healthy)?.unhealthyReason ?? null;
  }

  get waiting(): number {
    return this.slots.waiting;
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** The first fill's progress (n of N, rate, time left) while it runs; null once every slot was tried. */
  get warmup(): WarmupSnapshot | null {
    return this.fleet.warmupProgress;
  }

  /** Warms the pool. Each slot serves acquires as soon as its shell answers; resolves when all tried. */
  async start(): Promise<void> {
    await this.backend.init?.();
    await this.fleet.start();
    const everyMs = Math.max(100, Math.min(this.options.sessionIdleTimeoutMs / 4, RECLAIM_TICK_MS));
    this.idleTimer = setInterval(() => this.reclaimIdle(), everyMs);
    this.idleTimer.unref();
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    if (this.closing) throw new ShuttingDownError();
    const { deadline, timeoutMs } = acquireDeadline(request.acquireTimeoutMs, this.options.acquireTimeoutMs);
    for (let attempt = 1; ; attempt++) {
      const slot = await this.waits.time(this.slots.take(request.signal, deadline, () => this.waits.exhausted(timeoutMs, this.slots.waiting)));
      let lease: Lease;
      try {
        lease = await this.runner.prepare(slot, request);
      } catch (err) {
        checkPrepareRetry(err, attempt, deadline, request.signal);
        continue;
      }
      return this.runner.runStartupCommands(lease, request);
    }
  }

  /** `n` sessions, all or none (groupAcquire.ts). */
  acquireGroup(request: GroupAcquireRequest): Promise<AcquireResult[]> {
    if (this.closing) return Promise.reject(new ShuttingDownError());
    const { deadline, timeoutMs } = acquireDeadline(request.acquireTimeoutMs, this.options.acquireTimeoutMs);
    const host: GroupHost = {
      sessions: this.targetSessions,
      containers: this.fleet.containers.length,
      take: (n, spread) => this.waits.time(this.slots.takeGroup(n, spread, request.signal, deadline, () => this.waits.exhausted(timeoutMs, this.slots.waiting))),
      prepare: (slot) => this.runner.prepare(slot, request),
      checkRetry: (err, attempt) => checkPrepareRetry(err, attempt, deadline, request.signal),
      startup: (lease) => this.runner.runStartupCommands(lease, request),
      release: (id) => this.release(id),
    };
    return acquireGroup(host, request);
  }

  get maxLeaseTtlMs(): number {
    return this.runner.maxLeaseTtlMs;
  }

  /** A client's command on its lease, timed and journaled (leaseRunner.ts). */
  execute(sessionId: string, request: ExecuteRequest): Promise<ExecResult> {
    return this.runner.execute(sessionId, request);
  }

  /** Instant and idempotent: the slot is recycled in the background. */
  release(sessionId: string, why: 'released' | ReclaimReason = 'released'): void {
    const lease = this.leases.end(sessionId, why);
    if (!lease) return;
    lease.released = true;
    this.options.sandboxes?.unregister(sessionId);
    if (why !== 'released') {
      this.reclaims.add(why);
      this.observer.reclaimed(why);
    }
    this.options.onLeaseEnded?.({ session_id: lease.id, acquired_at_ms: lease.acquiredAtMs, ended_at_ms: Date.now(), ended_by: why, ...lease.journal.snapshot() });
    lease.end();
    const slot = lease.slot;
    if (!slot) return; // it broke earlier and is already being rebuilt
    lease.slot = null;
    slot.lease = null;
    this.states.move(slot, SessionState.CLEANING);
    if (this.options.freshContainer) void this.fleet.renew(slot.container);
    else void this.rebuilder.schedule(slot, lease.workdir);
  }

  /** Every live lease, broken ones too (the dashboard lists them). */
  liveLeases(): readonly Lease[] {
    return this.leases.list();
  }

  /**
   * Ends a live (or broken) lease for an operator (the dashboard): `released` as if its holder had
   * released it, `operator` reclaimed (its holder's next call is told so, and it is counted). Throws
   * the id's own error when it is not live, and refuses a slot taken out (a workspace's, a lifecycle sandbox's: ended with its owner).
   */
  endLease(sessionId: string, why: 'released' | 'operator'): void {
    // 404 unknown, 400 ended; a broken lease may be ended (its holder has not released it yet).
    if (this.leases.require(sessionId, true).takenOut) throw new LeaseHeldError(sessionId);
    this.release(sessionId, why);
  }

  /** An operator replaces container `index` (containerFleet.ts); false when it is being replaced already. */
  replaceContainer(index: number): boolean {
    if (!Number.isInteger(index) || index < 0 || index >= this.containers.length) throw new ContainerNotFoundError(index, this.containers.length);
    return this.fleet.replace(index, 'replaced by an operator');
  }

  health(): { counts: ReturnType<SessionStates<Slot>['snapshot']>; healthyContainers: number; unhealthyContainers: number } {
    const healthyContainers = this.containers.filter((c) => c.healthy).length;
    return { counts: this.states.snapshot(), healthyContainers, unhealthyContainers: this.containers.length - healthyContainers };
  }

  /** The backend's per-lease isolation, for /health; null where it has none (the report says whether it was asked for). */
  isolation(): IsolationReport | null {
    return this.backend.isolation?.status() ?? null;
  }

  /** Renews the lease (its idle timeout and lease_ttl start again); its ttl in ms, or null. */
  heartbeat(sessionId: string): number | null {
    const lease = this.leases.require(sessionId);
    lease.lastActivityMs = Date.now();
    return lease.ttlMs;
  }

  /** The lease's journal (a call on the lease: it renews it). */
  history(sessionId: string): ReturnType<Lease['journal']['snapshot']> {
    this.heartbeat(sessionId);
    return this.leases.require(sessionId).journal.snapshot();
  }

  /** Backpressure and reclaims, for /health. */
  stats(): PoolStats {
    return { waiting: this.slots.waiting, waitP50Ms: this.waits.p50Ms(), reclaimed: this.reclaims.snapshot() };
  }

  /** Where a live lease's session lives, for the per-sandbox APIs (LeaseRunner.site). */
  site(sessionId: string): SandboxHandle {
    return this.runner.site(sessionId);
  }

  /** Live lease `sessionId` (snapshots read its shell); throws as execute would for an unknown, ended or broken id. */
  lease(sessionId: string): Lease {
    return this.leases.require(sessionId);
  }

  /** Live lease `sessionId` given a new shell in its directory, the old one closed (a view started from a snapshot). */
  reopenShell(sessionId: string): Promise<BashSession> {
    return this.rebuilder.reopen(this.leases.require(sessionId));
  }

  /** Whether `sessionId` is a lease of this pool, live or ended (a registry of pools routes ids by it). */
  knows(sessionId: string): boolean {
    return this.leases.knows(sessionId);
  }

  /** A slot for a workspace, waiting in the acquire queue like an acquire does. */
  async takeOut(signal?: AbortSignal): Promise<TakenSlot> {
    const { sessionId } = await this.acquire({ files: [], startupCommands: [], signal });
    const lease = this.leases.require(sessionId);
    lease.takenOut = true; // never reclaimed (leaseTtl.ts): its owner gives it back
    const slot = lease.slot!;
    return {
      sessionId,
      slotId: slot.slotId,
      container: slot.container.ref!,
      workdir: lease.workdir,
      shell: () => (lease.released ? null : (lease.slot?.session ?? null)),
      lostReason: () => lease.brokenReason,
      onLost: (listener) => {
        if (lease.brokenReason !== null) queueMicrotask(() => listener(lease.brokenReason!));
        else lease.onBroken = listener;
      },
      giveBack: () => this.release(sessionId),
    };
  }

  /** Stops taking acquires, lets running commands finish within `graceMs`, then kills everything. */
  close(graceMs: number): Promise<void> {
    this.closePromise ??= this.doClose(graceMs);
    return this.closePromise;
  }

  private async doClose(graceMs: number): Promise<void> {
    this.closing = true;
    this.slots.rejectAll(new ShuttingDownError());
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.fleet.stopHealthChecks();
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && this.leases.anyExecuting()) await delay(50);
    this.workers.clear();
    // A rebuild already running would otherwise open a shell after we closed the others.
    await Promise.race([Promise.all([this.workers.onIdle(), this.fleet.settleStarts()]), delay(5_000)]);
    const sessions = this.containers.flatMap((c) => c.slots.map((s) => s.session)).filter((s): s is BashSession => s !== null);
    await Promise.all(sessions.map((s) => s.close().catch(() => undefined)));
    await this.fleet.removeAll();
    await this.backend.close();
  }

  /** A slot became AVAILABLE: the oldest waiter gets it, or it joins the free list. */
  private offer(slot: Slot): void {
    if (!this.closing) this.slots.offer(slot);
  }

  /** The idle timeout's and lease_ttl's one path (leaseTtl.ts). */
  private reclaimIdle(): void {
    for (const { lease, reason } of this.leases.overdue(Date.now(), this.options.sessionIdleTimeoutMs)) {
      logger.info({ sessionId: lease.id, reason }, 'reclaiming a session');
      this.release(lease.id, reason);
    }
  }
}
