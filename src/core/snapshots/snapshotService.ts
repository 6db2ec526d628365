/**
 * Branching an episode (docs/snapshots.md): a snapshot of a leased session (its own writes and its
 * shell's state), new sessions started from it (acquire, fork), and a lease put back to one of its
 * own (restore). The records are the book's (snapshotBook.ts), the layers the backend's
 * (ports/snapshotLayers.ts), the shell's state this module's (shellState.ts). Knows no HTTP and no
 * container technology.
 */
import { newSnapshotId } from './snapshotIds';
import type { PoolEntry, PoolRegistry } from '../pool/poolRegistry';
import type { SessionPool } from '../pool/pool';
import type { AcquireResult } from '../pool/poolTypes';
import type { SnapshotLayers } from '../ports/snapshotLayers';
import { BackendError, SessionBrokenError } from '../../common/errors';
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';
import { SnapshotBook, type SnapshotRecord, type SnapshotSandbox, type SnapshotView } from './snapshotBook';
import { DUMP_STATE_COMMAND, parseShellState, restoreStateCommand } from './shellState';
import { SnapshotBudgetError, SnapshotNotOwnError, SnapshotOtherPoolError, SnapshotsUnsupportedError, SnapshotTooDeepError, SnapshotWhileRunningError } from './snapshotErrors';

export interface SnapshotOptions {
  /** Bytes all snapshots of the node may hold (BROKER_SNAPSHOT_BUDGET_BYTES). */
  budgetBytes: number;
  /** A snapshot's lifetime unless its request names one (BROKER_SNAPSHOT_TTL). */
  ttlMs: number;
}

/** How long the shell's state may take to read or write (a starved container is slow). */
const STATE_TIMEOUT_MS = 30_000;
/** The state of a shell is its variables and functions: far below this, unless a variable holds a file. */
const MAX_STATE_BYTES = 64 * 1024 * 1024;
const SWEEP_EVERY_MS = 1_000;

/** What a snapshot's client tells of it beyond the session: its name, the lifecycle sandbox it is of. */
export interface SnapshotOrigin {
  name?: string | null;
  sandbox?: SnapshotSandbox | null;
}

/** How a session is started from a snapshot: its own acquire's timeout and lease_ttl. */
export interface StartRequest {
  acquireTimeoutMs?: number;
  leaseTtlMs?: number;
  /** A pool the request named: it must be the snapshot's. */
  pool?: string;
  signal?: AbortSignal;
}

export class SnapshotService {
  readonly book: SnapshotBook;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pools: PoolRegistry,
    private readonly options: SnapshotOptions,
  ) {
    this.book = new SnapshotBook(options.budgetBytes, (sessionId) => this.isLive(sessionId));
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  /** POST /session/{id}/snapshot: the lease's view and shell state frozen; the session goes on. */
  async snapshot(sessionId: string, ttlMs = this.options.ttlMs, origin: SnapshotOrigin = {}): Promise<SnapshotView> {
    const { pool, name, layers } = this.site(sessionId);
    const lease = pool.lease(sessionId);
    if (lease.executing) throw new SnapshotWhileRunningError(sessionId);
    const session = lease.slot?.session;
    if (!session?.alive) throw new SessionBrokenError(sessionId, lease.brokenReason ?? 'no shell');
    const base = this.book.baseOf(sessionId);
    const below = base ? this.book.require(base).chain : [];
    if (below.length >= layers.maxDepth) throw new SnapshotTooDeepError(sessionId, below.length);
    const used = this.book.usedBytes;
    if (used >= this.options.budgetBytes) throw new SnapshotBudgetError(1, used, this.options.budgetBytes);
    // Held as a command holds it: an execute meanwhile is refused (409), so the view is quiescent.
    lease.executing = true;
    const id = newSnapshotId();
    try {
      const dump = await session.execute(DUMP_STATE_COMMAND, { timeoutMs: STATE_TIMEOUT_MS, maxOutputBytes: MAX_STATE_BYTES });
      if (dump.timedOut || dump.truncated) throw new BackendError(`the shell's state could not be read (${dump.timedOut ? 'timed out' : 'too large'})`);
      const state = parseShellState(dump.stdout);
      const { bytes } = await layers.capture(session.shell, id);
      if (this.book.usedBytes + bytes > this.options.budgetBytes) {
        await layers.remove(id);
        throw new SnapshotBudgetError(bytes, this.book.usedBytes, this.options.budgetBytes);
      }
      const now = Date.now();
      const record: SnapshotRecord = { id, poolName: name, parentSession: sessionId, base, chain: [id, ...below], bytes, createdAtMs: now, expiresAtMs: now + ttlMs, state, parentWorkdir: lease.workdir, forks: 0, name: origin.name ?? null, sandbox: origin.sandbox ?? null };
      this.book.add(record);
      return this.book.view(record, now);
    } finally {
      lease.executing = false;
      lease.lastActivityMs = Date.now();
    }
  }

  /** Releases leases started from a snapshot whose answer never reached its client. */
  releaseAll(sessionIds: readonly string[]): void {
    for (const id of sessionIds) {
      try {
        this.pools.owning(id).release(id);
      } catch {
        // gone already
      }
    }
  }

  /** POST /session/acquire {"snapshot"}: a new lease of the snapshot's pool, started from it. */
  async acquire(snapshotId: string, request: StartRequest): Promise<AcquireResult> {
    const [result] = await this.acquireMany(snapshotId, 1, request);
    return result;
  }

  /** `n` new leases started from the snapshot, all or none (acquire_group's rule). */
  async acquireMany(snapshotId: string, n: number, request: StartRequest): Promise<AcquireResult[]> {
    const record = this.book.require(snapshotId);
    if (request.pool !== undefined && request.pool !== record.poolName) throw new SnapshotOtherPoolError(snapshotId, record.poolName, request.pool);
    const { pool, layers } = this.entry(record.poolName);
    const plain = { files: [], startupCommands: [], acquireTimeoutMs: request.acquireTimeoutMs, leaseTtlMs: request.leaseTtlMs, signal: request.signal };
    const results = n === 1 ? [await pool.acquire(plain)] : await pool.acquireGroup({ ...plain, n, spread: false });
    const started = await Promise.allSettled(results.map((r) => this.startFrom(pool, layers, record, r.sessionId)));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      for (const r of results) pool.release(r.sessionId);
      throw failed.reason;
    }
    return results;
  }

  /** POST /session/{id}/fork: a snapshot and `n` sessions started from it, all or nothing (the snapshot too). */
  async fork(sessionId: string, n: number, request: StartRequest, ttlMs?: number): Promise<{ snapshot: SnapshotView; sessions: AcquireResult[] }> {
    const snapshot = await this.snapshot(sessionId, ttlMs);
    try {
      const sessions = await this.acquireMany(snapshot.snapshot_id, n, request);
      return { snapshot: this.book.view(this.book.require(snapshot.snapshot_id), Date.now()), sessions };
    } catch (err) {
      await this.remove(snapshot.snapshot_id).catch(() => undefined);
      throw err;
    }
  }

  /** POST /session/{id}/restore: the lease put back to a snapshot of its own, in place (same id, same directory). */
  async restore(sessionId: string, snapshotId: string): Promise<SnapshotView> {
    const record = this.book.require(snapshotId);
    if (record.parentSession !== sessionId) throw new SnapshotNotOwnError(snapshotId, sessionId);
    const { pool, layers } = this.entry(record.poolName);
    const lease = pool.lease(sessionId);
    if (lease.executing) throw new SnapshotWhileRunningError(sessionId);
    lease.executing = true;
    try {
      await this.startFrom(pool, layers, record, sessionId);
    } finally {
      lease.executing = false;
      lease.lastActivityMs = Date.now();
    }
    return this.book.view(record, Date.now());
  }

  /** DELETE /snapshots/{id}: refused (409) while a live session or a snapshot lies on its layer. */
  async remove(snapshotId: string): Promise<void> {
    const record = this.book.remove(snapshotId);
    await this.entry(record.poolName).layers.remove(record.id);
  }

  /**
   * The pool a snapshot's sessions start in (a lifecycle sandbox restored from it takes a slot of
   * it): 404 for an unknown snapshot, 501 for a pool that keeps no layers or is gone.
   */
  poolOf(snapshotId: string): PoolEntry {
    const record = this.book.require(snapshotId);
    const entry = this.pools.entries.find((e) => e.name === record.poolName);
    if (!entry) throw new SnapshotsUnsupportedError(`pool '${record.poolName}' is gone`);
    this.layersOf(entry.backend?.snapshots);
    return entry;
  }

  /** A lease just taken out of the snapshot's pool (pool.takeOut), started from the snapshot: a lifecycle sandbox's restore. */
  async startTaken(snapshotId: string, sessionId: string): Promise<void> {
    const record = this.book.require(snapshotId);
    const { pool, layers } = this.entry(record.poolName);
    await this.startFrom(pool, layers, record, sessionId);
  }

  /** Whether any pool keeps session layers (none on the local backend, nor with isolation off): else every snapshot is a 501. */
  get served(): boolean {
    return this.pools.entries.some((e) => e.backend?.snapshots !== undefined);
  }

  /** A snapshot's record (404 unknown). */
  record(snapshotId: string): SnapshotRecord {
    return this.book.require(snapshotId);
  }

  /** Every snapshot's record, oldest first. */
  records(): SnapshotRecord[] {
    return this.book.all();
  }

  list(): { budget_bytes: number; used_bytes: number; snapshots: SnapshotView[] } {
    return { budget_bytes: this.options.budgetBytes, used_bytes: this.book.usedBytes, snapshots: this.book.list(Date.now()) };
  }

  close(): void {
    clearInterval(this.timer);
  }

  /**
   * Lease `sessionId` (just acquired, or restored) given a new shell whose view is the image,
   * the record's layers and a fresh layer of its own, its working directory the snapshot's, then
   * the snapshot's shell state.
   */
  private async startFrom(pool: SessionPool, layers: SnapshotLayers, record: SnapshotRecord, sessionId: string): Promise<void> {
    const workdir = pool.lease(sessionId).workdir;
    await layers.startFrom(workdir, record.chain);
    let session;
    try {
      session = await pool.reopenShell(sessionId);
    } finally {
      await layers.started(workdir);
    }
    const restored = await session.execute(restoreStateCommand(record.state, record.parentWorkdir, workdir), { timeoutMs: STATE_TIMEOUT_MS, maxOutputBytes: 64 * 1024 });
    if (restored.timedOut) throw new BackendError('the shell state of the snapshot could not be restored in time');
    this.book.started(sessionId, record.id);
  }

  /** The pool that leased `sessionId`, and its backend's layers. */
  private site(sessionId: string): { pool: SessionPool; name: string; layers: SnapshotLayers } {
    const pool = this.pools.owning(sessionId);
    const entry = this.pools.entries.find((e) => e.pool === pool);
    if (!entry) throw new SnapshotsUnsupportedError("this session is of an image's pool made on demand; snapshots are served for configured pools");
    return { pool, name: entry.name, layers: this.layersOf(entry.backend?.snapshots) };
  }

  private entry(name: string): { pool: SessionPool; layers: SnapshotLayers } {
    const entry = this.pools.entries.find((e) => e.name === name);
    if (!entry) throw new SnapshotsUnsupportedError(`pool '${name}' is gone`);
    return { pool: entry.pool, layers: this.layersOf(entry.backend?.snapshots) };
  }

  private layersOf(layers: SnapshotLayers | undefined): SnapshotLayers {
    if (!layers) throw new SnapshotsUnsupportedError('this pool\'s backend keeps no session layers (the local backend, or BROKER_SESSION_ISOLATION=0)');
    return layers;
  }

  private isLive(sessionId: string): boolean {
    try {
      this.pools.owning(sessionId).lease(sessionId);
      return true;
    } catch {
      return false;
    }
  }

  /** Expired snapshots that nothing holds: their layers removed. */
  private async sweep(): Promise<void> {
    for (const record of this.book.expired(Date.now())) {
      try {
        await this.entry(record.poolName).layers.remove(record.id);
      } catch (err) {
        logger.warn({ snapshot: record.id, err: errorMessage(err) }, 'could not remove an expired snapshot');
      }
    }
  }
}
