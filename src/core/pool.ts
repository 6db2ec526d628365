/**
 * The session pool: leases warm shells to clients, runs their commands, recycles released slots on
 * background workers and rebuilds broken ones. It knows no HTTP and no container technology: it
 * talks to a SessionBackend and reports to a PoolObserver.
 */
import PQueue from 'p-queue';
import { BashSession, ShellDiedError, type BashSessionTimings, DEFAULT_TIMINGS, type ExecResult } from './bashSession';
import { sessionWorkdir, type SessionBackend, type ShellProcess, type StreamName, type WorkdirFile } from './backend';
import { ContainerEntry, Lease, Slot } from './slot';
import { SessionState, SessionStates } from './states';
import { WaitQueue } from './waitQueue';
import { type PoolObserver, NOOP_OBSERVER } from './observer';
import { ContainerMonitor } from './containerMonitor';
import { LeaseBook } from './leaseBook';
import {
  AbortedError,
  BrokerError,
  PoolExhaustedError,
  SessionBrokenError,
  SessionBusyError,
  SessionNotInUseError,
  SessionUnavailableError,
  ShuttingDownError,
  errorMessage,
} from '../common/errors';
import { newSessionId } from '../common/ids';
import { logger } from '../common/logger';
import { delay } from '../common/delay';

export interface PoolOptions {
  containers: number;
  sessionsPerContainer: number;
  acquireTimeoutMs: number;
  cleanupWorkers: number;
  sessionIdleTimeoutMs: number;
  defaultCommandTimeoutMs: number;
  maxOutputBytes: number;
  healthCheckIntervalMs: number;
  /** How many containers start at once during warm-up and replacement. */
  startConcurrency: number;
  timings?: BashSessionTimings;
}

export interface AcquireRequest {
  files: readonly WorkdirFile[];
  startupCommands: readonly string[];
  signal?: AbortSignal;
}

export interface AcquireResult {
  sessionId: string;
  startupResults: ExecResult[];
}

export interface ExecuteRequest {
  command: string;
  timeoutMs: number;
  onOutput?: (stream: StreamName, chunk: Buffer) => void;
}

/** A startup command killed its shell: no session was leased. */
export class StartupFailedError extends BrokerError {
  constructor(index: number, reason: string) {
    super(422, 'startup_failed', `startup_commands[${index}] broke the session (${reason}); no session was leased`);
  }
}

const REBUILD_BACKOFF_MAX_MS = 30_000;
/** Slots an acquire tries when the one it got fails while being prepared (its shell or container died). */
const PREPARE_ATTEMPTS = 3;

export class SessionPool {
  readonly states: SessionStates<Slot>;
  readonly containers: ContainerEntry[] = [];
  private readonly leases = new LeaseBook();
  private readonly available: Slot[] = [];
  private readonly waiters = new WaitQueue<Slot>();
  private readonly workers: PQueue;
  private readonly starters: PQueue;
  private readonly monitor: ContainerMonitor;
  private readonly timings: BashSessionTimings;
  private idleTimer: NodeJS.Timeout | null = null;
  private closing = false;
  private closePromise: Promise<void> | null = null;

  constructor(
    private readonly backend: SessionBackend,
    private readonly options: PoolOptions,
    private readonly observer: PoolObserver = NOOP_OBSERVER,
  ) {
    this.states = new SessionStates<Slot>();
    this.workers = new PQueue({ concurrency: options.cleanupWorkers });
    this.starters = new PQueue({ concurrency: options.startConcurrency });
    this.timings = options.timings ?? DEFAULT_TIMINGS;
    this.monitor = new ContainerMonitor(backend, this.containers, options.healthCheckIntervalMs, (entry, reason) =>
      this.onContainerFailed(entry, reason),
    );
    for (let c = 0; c < options.containers; c++) {
      const entry = new ContainerEntry(c);
      for (let s = 0; s < options.sessionsPerContainer; s++) entry.slots.push(new Slot(`c${c}s${s}`, entry));
      this.containers.push(entry);
    }
  }

  get targetSessions(): number {
    return this.options.containers * this.options.sessionsPerContainer;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** Warms the pool. Each slot serves acquires as soon as its shell answers; resolves when all tried. */
  async start(): Promise<void> {
    await this.backend.init?.();
    await Promise.all(this.containers.map((entry) => this.startContainer(entry)));
    this.monitor.start();
    const everyMs = Math.max(100, Math.min(this.options.sessionIdleTimeoutMs / 4, 15_000));
    this.idleTimer = setInterval(() => this.reclaimIdle(), everyMs);
    this.idleTimer.unref();
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    if (this.closing) throw new ShuttingDownError();
    const deadline = Date.now() + this.options.acquireTimeoutMs;
    for (let attempt = 1; ; attempt++) {
      const lease = this.lease(await this.takeSlot(request.signal, deadline));
      try {
        // The lease is not the client's yet: if its shell or container fails here, try another slot.
        await this.backend.prepareWorkdir(lease.slot!.container.ref!, lease.workdir, request.files);
        await this.runOnLease(lease, `builtin cd -- '${lease.workdir}'`, 10_000);
      } catch (err) {
        this.release(lease.id, 'released');
        // A dead shell (410) or a failing backend (5xx, or an unexpected error) is the slot's fault, not the request's.
        const retryable = err instanceof SessionBrokenError || !(err instanceof BrokerError) || err.status >= 500;
        if (!retryable || request.signal?.aborted) throw err;
        logger.warn({ attempt, err: errorMessage(err) }, 'acquire: a session failed while being prepared');
        if (attempt >= PREPARE_ATTEMPTS || Date.now() >= deadline) throw new SessionUnavailableError(attempt, errorMessage(err));
        continue;
      }
      return this.runStartupCommands(lease, request);
    }
  }

  /** A free slot now, or the oldest waiter's turn before `deadline`. */
  private async takeSlot(signal: AbortSignal | undefined, deadline: number): Promise<Slot> {
    const waitStart = process.hrtime.bigint();
    try {
      const slot = this.takeAvailable() ?? (await this.waitForSlot(signal, deadline));
      this.observer.acquireWaited(secondsSince(waitStart), 'ok');
      return slot;
    } catch (err) {
      this.observer.acquireWaited(secondsSince(waitStart), err instanceof PoolExhaustedError ? 'timeout' : 'aborted');
      throw err;
    }
  }

  private async runStartupCommands(lease: Lease, request: AcquireRequest): Promise<AcquireResult> {
    try {
      const startupResults: ExecResult[] = [];
      for (const [index, command] of request.startupCommands.entries()) {
        if (request.signal?.aborted) throw new AbortedError('acquire');
        try {
          startupResults.push(await this.runOnLease(lease, command, this.options.defaultCommandTimeoutMs));
        } catch (err) {
          throw err instanceof SessionBrokenError ? new StartupFailedError(index, lease.brokenReason ?? err.message) : err;
        }
      }
      if (request.signal?.aborted) throw new AbortedError('acquire');
      return { sessionId: lease.id, startupResults };
    } catch (err) {
      this.release(lease.id, 'released');
      throw err;
    }
  }

  async execute(sessionId: string, request: ExecuteRequest): Promise<ExecResult> {
    const lease = this.leases.require(sessionId);
    if (lease.executing) throw new SessionBusyError(sessionId);
    const started = process.hrtime.bigint();
    try {
      const result = await this.runOnLease(lease, request.command, request.timeoutMs, request.onOutput);
      this.observer.executed(secondsSince(started), result.timedOut ? 'timeout' : result.returnCode === 0 ? 'success' : 'failed');
      return result;
    } catch (err) {
      this.observer.executed(secondsSince(started), 'error');
      throw err;
    }
  }

  /** Instant and idempotent: the slot is recycled in the background. */
  release(sessionId: string, why: 'released' | 'reclaimed' = 'released'): void {
    const lease = this.leases.end(sessionId, why);
    if (!lease) return;
    lease.released = true;
    const slot = lease.slot;
    if (!slot) return; // it broke earlier and is already being rebuilt
    lease.slot = null;
    slot.lease = null;
    this.states.move(slot, SessionState.CLEANING);
    if (why === 'reclaimed') this.observer.reclaimed();
    void this.workers.add(() => this.rebuild(slot, lease.workdir));
  }

  health(): { counts: ReturnType<SessionStates<Slot>['snapshot']>; healthyContainers: number; unhealthyContainers: number } {
    const healthyContainers = this.containers.filter((c) => c.healthy).length;
    return { counts: this.states.snapshot(), healthyContainers, unhealthyContainers: this.containers.length - healthyContainers };
  }

  /** Stops taking acquires, lets running commands finish within `graceMs`, then kills everything. */
  close(graceMs: number): Promise<void> {
    this.closePromise ??= this.doClose(graceMs);
    return this.closePromise;
  }

  private async doClose(graceMs: number): Promise<void> {
    this.closing = true;
    this.waiters.rejectAll(new ShuttingDownError());
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.monitor.stop();
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && this.leases.anyExecuting()) await delay(50);
    this.workers.clear();
    this.starters.clear();
    // A rebuild already running would otherwise open a shell after we closed the others.
    await Promise.race([Promise.all([this.workers.onIdle(), this.starters.onIdle()]), delay(5_000)]);
    const sessions = this.containers.flatMap((c) => c.slots.map((s) => s.session)).filter((s): s is BashSession => s !== null);
    await Promise.all(sessions.map((s) => s.close().catch(() => undefined)));
    await Promise.all(this.containers.map((c) => (c.ref ? this.backend.removeContainer(c.ref).catch(() => undefined) : undefined)));
    await this.backend.close();
  }

  private takeAvailable(): Slot | null {
    if (this.waiters.length > 0) return null; // keep FIFO fairness: queued clients go first
    while (this.available.length) {
      const slot = this.available.shift()!;
      if (slot.state === SessionState.AVAILABLE && !slot.lease) return slot;
    }
    return null;
  }

  private waitForSlot(signal: AbortSignal | undefined, deadline: number): Promise<Slot> {
    const seconds = this.options.acquireTimeoutMs / 1000;
    return this.waiters.wait(
      Math.max(0, deadline - Date.now()),
      signal,
      () => new PoolExhaustedError(seconds),
      () => new AbortedError('acquire'),
    );
  }

  /** A slot became AVAILABLE: the oldest waiter gets it, or it joins the available list. */
  private offer(slot: Slot): void {
    if (this.closing) return;
    if (!this.waiters.serve(slot)) this.available.push(slot);
  }

  private lease(slot: Slot): Lease {
    const id = newSessionId();
    const lease = new Lease(id, slot, sessionWorkdir(id), Date.now());
    slot.lease = lease;
    this.states.move(slot, SessionState.IN_USE);
    this.leases.add(lease);
    return lease;
  }

  private async runOnLease(
    lease: Lease,
    command: string,
    timeoutMs: number,
    onOutput?: ExecuteRequest['onOutput'],
  ): Promise<ExecResult> {
    const session = lease.slot?.session;
    if (!session) throw new SessionBrokenError(lease.id, lease.brokenReason ?? 'no shell');
    lease.executing = true;
    lease.lastActivityMs = Date.now();
    try {
      const result = await session.execute(command, { timeoutMs, maxOutputBytes: this.options.maxOutputBytes, onOutput });
      // Its container failed while it ran (a paused container is thawed to be removed, and its
      // output may still arrive): the lease's state is lost, and the answer says so.
      if (lease.brokenReason !== null) throw new SessionBrokenError(lease.id, lease.brokenReason);
      return result;
    } catch (err) {
      if (!(err instanceof ShellDiedError)) throw err;
      if (lease.brokenReason !== null) throw new SessionBrokenError(lease.id, lease.brokenReason);
      if (lease.released) throw new SessionNotInUseError(lease.id, 'released while the command was running');
      throw new SessionBrokenError(lease.id, err.reason);
    } finally {
      lease.executing = false;
      lease.lastActivityMs = Date.now();
    }
  }

  private reclaimIdle(): void {
    const cutoff = Date.now() - this.options.sessionIdleTimeoutMs;
    for (const lease of this.leases.idleSince(cutoff)) {
      logger.info({ sessionId: lease.id }, 'reclaiming idle session');
      this.release(lease.id, 'reclaimed');
    }
  }

  /**
   * Only the engine's part of a container start holds a starter: connecting to it and its shells
   * happen meanwhile, so the next container starts at once (Docker's start rate sets the warm-up).
   */
  private async startContainer(entry: ContainerEntry): Promise<void> {
    await this.bootContainer(entry);
    await this.fillContainer(entry);
  }

  /** Starts the container itself; on failure the entry stays unhealthy and the monitor retries. */
  private async bootContainer(entry: ContainerEntry): Promise<void> {
    try {
      const ref = await this.starters.add(() => this.backend.startContainer(entry.index));
      try {
        await this.backend.connectContainer?.(ref);
      } catch (err) {
        await this.backend.removeContainer(ref).catch(() => undefined);
        throw err;
      }
      if (this.closing) {
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
  private async fillContainer(entry: ContainerEntry): Promise<void> {
    await Promise.all(entry.slots.map((slot) => this.workers.add(() => this.rebuild(slot, null))));
  }

  /**
   * Gives `slot` a fresh shell: closes the old one (killing everything its lease started), removes
   * the lease's working directory, opens a new shell. Ends AVAILABLE, or BROKEN with a retry.
   */
  private async rebuild(slot: Slot, workdir: string | null): Promise<void> {
    if (slot.rebuilding) return;
    if (this.states.has(slot) && slot.state !== SessionState.CLEANING && slot.state !== SessionState.BROKEN) return;
    slot.rebuilding = true;
    const started = process.hrtime.bigint();
    let reused: ShellProcess | null = null;
    try {
      const old = slot.session;
      slot.session = null;
      const container = slot.container;
      reused = old ? await this.recycleShell(old, !this.closing && container.healthy) : null;
      if (this.closing || !container.ref || !container.healthy) {
        // A shell recycled just before the pool closed or the container failed is no one's: close it.
        await reused?.close();
        if (this.closing) return;
        throw new Error(container.unhealthyReason ?? 'container is not running');
      }
      for (const dir of [workdir, slot.orphanWorkdir]) if (dir) await this.backend.removeWorkdir(container.ref, dir);
      slot.orphanWorkdir = null;
      const shell = reused ?? (await this.backend.openShell(container.ref, { slotId: slot.slotId }));
      const session = new BashSession(shell, this.timings);
      slot.session = session;
      session.onDeath((reason) => this.onSessionDeath(slot, session, reason));
      await session.start();
      if (this.closing) return;
      slot.failures = 0;
      if (this.states.has(slot)) this.states.move(slot, SessionState.AVAILABLE);
      else this.states.add(slot, SessionState.AVAILABLE);
      if (workdir) this.observer.cleaned(secondsSince(started), true);
      this.offer(slot);
    } catch (err) {
      if (workdir) this.observer.cleaned(secondsSince(started), false);
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
    if (slot.session !== session || this.closing) return;
    if (slot.state === SessionState.CLEANING || slot.state === SessionState.BROKEN) return;
    logger.warn({ slot: slot.slotId, reason }, 'session shell died');
    this.markBroken(slot, reason);
    this.monitor.checkSoon(); // a dead shell often means a dead container: look now, not at the next tick
  }

  /** Moves a slot to BROKEN (its lease, if any, learns why) and schedules its rebuild. */
  private markBroken(slot: Slot, reason: string): void {
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
    if (this.closing || slot.container.replacing) return;
    const backoffMs = Math.min(REBUILD_BACKOFF_MAX_MS, 250 * 2 ** Math.max(0, slot.failures - 1));
    setTimeout(() => {
      if (!this.closing && slot.state === SessionState.BROKEN && !slot.container.replacing) {
        void this.workers.add(() => this.rebuild(slot, null));
      }
    }, slot.failures === 0 ? 0 : backoffMs).unref();
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
    entry.healthy = false;
    entry.unhealthyReason = reason;
    try {
      for (const slot of entry.slots) {
        if (slot.state !== SessionState.BROKEN && slot.state !== SessionState.CLEANING) this.markBroken(slot, `container failed: ${reason}`);
      }
      if (entry.ref) await this.backend.removeContainer(entry.ref).catch(() => undefined);
      entry.ref = null;
      if (!this.closing) await this.bootContainer(entry);
    } finally {
      entry.replacing = false;
    }
    if (!this.closing && entry.healthy) await this.fillContainer(entry);
  }
}

function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

