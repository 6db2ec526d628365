/**
 * The node's snapshots (docs/snapshots.md): each one's record, what depends on its layer (live
 * sessions started from it or from a snapshot above it, and snapshots taken above it), the byte
 * budget and the lifetimes. Pure bookkeeping: the bytes are the backend's (ports/snapshotLayers.ts).
 */
import type { ShellState } from './shellState';
import { SnapshotInUseError, SnapshotNotFoundError } from './snapshotErrors';

/** The lifecycle sandbox a snapshot was taken of (OpenSandbox's `sandboxId`), and what a sandbox restored from it inherits. */
export interface SnapshotSandbox {
  readonly id: string;
  /** Its create's `env`: a sandbox restored from the snapshot gives it to every shell it opens, as its source did. */
  readonly env: Readonly<Record<string, string>>;
}

export interface SnapshotRecord {
  readonly id: string;
  /** The pool whose session it was taken of: its forks start there. */
  readonly poolName: string;
  readonly parentSession: string;
  /** The snapshot the parent session started from (its layers lie beneath this one's), or null. */
  readonly base: string | null;
  /** Its layers, newest first: itself, then its base's. */
  readonly chain: readonly string[];
  readonly bytes: number;
  readonly createdAtMs: number;
  expiresAtMs: number;
  readonly state: ShellState;
  /** The parent lease's working directory, which a fork's own replaces in the state. */
  readonly parentWorkdir: string;
  /** Sessions started from it so far (acquires, forks, restores). */
  forks: number;
  /** A name its client gave it (the lifecycle API's `name`), or null. */
  readonly name: string | null;
  /** The lifecycle sandbox it was taken of, or null (a lease of the pool API). */
  readonly sandbox: SnapshotSandbox | null;
}

/** A snapshot as GET /snapshots and the snapshot route answer it. */
export interface SnapshotView {
  snapshot_id: string;
  pool: string;
  parent_session: string;
  parent_snapshot: string | null;
  depth: number;
  bytes: number;
  created_at_ms: number;
  age_seconds: number;
  expires_at_ms: number;
  forks: number;
  live_forks: string[];
  cwd: string;
  background_processes: string[];
}

export class SnapshotBook {
  private readonly records = new Map<string, SnapshotRecord>();
  /** Live sessions started from a snapshot (acquire, fork or restore): session id -> snapshot id. */
  private readonly startedFrom = new Map<string, string>();

  constructor(
    /** Bytes every snapshot of the node may hold together. */
    readonly budgetBytes: number,
    /** Whether a session is still leased (a fork that ended holds no layer). */
    private readonly isLive: (sessionId: string) => boolean,
  ) {}

  get usedBytes(): number {
    let used = 0;
    for (const r of this.records.values()) used += r.bytes;
    return used;
  }

  add(record: SnapshotRecord): void {
    this.records.set(record.id, record);
  }

  require(id: string): SnapshotRecord {
    const record = this.records.get(id);
    if (!record) throw new SnapshotNotFoundError(id);
    return record;
  }

  /** The snapshot a live session started from, or null. */
  baseOf(sessionId: string): string | null {
    const id = this.startedFrom.get(sessionId);
    if (id === undefined) return null;
    if (this.isLive(sessionId) && this.records.has(id)) return id;
    this.startedFrom.delete(sessionId);
    return null;
  }

  /** `sessionId` now runs on `id`'s layers. */
  started(sessionId: string, id: string): void {
    this.startedFrom.set(sessionId, id);
    this.require(id).forks++;
  }

  /** What holds `id`'s layer: live sessions on a chain through it, snapshots above it. */
  users(id: string): { sessions: string[]; snapshots: string[] } {
    const sessions: string[] = [];
    for (const [sessionId, base] of this.startedFrom) {
      if (!this.isLive(sessionId)) {
        this.startedFrom.delete(sessionId);
        continue;
      }
      if (this.records.get(base)?.chain.includes(id)) sessions.push(sessionId);
    }
    const snapshots = [...this.records.values()].filter((r) => r.id !== id && r.chain.includes(id)).map((r) => r.id);
    return { sessions, snapshots };
  }

  /** Takes `id` out of the book; refuses (409) while anything holds its layer. */
  remove(id: string): SnapshotRecord {
    const record = this.require(id);
    const { sessions, snapshots } = this.users(id);
    if (sessions.length > 0 || snapshots.length > 0) {
      const who = [...sessions.map((s) => `session ${s}`), ...snapshots.map((s) => `snapshot ${s}`)];
      throw new SnapshotInUseError(id, who.slice(0, 5).join(', ') + (who.length > 5 ? ` and ${who.length - 5} more` : ''));
    }
    this.records.delete(id);
    return record;
  }

  /** Snapshots past their TTL that nothing holds any more (one held waits for its users to end). */
  expired(nowMs: number): SnapshotRecord[] {
    const gone: SnapshotRecord[] = [];
    // Newest first: a snapshot above an expired one goes before it, in the same sweep.
    for (const record of [...this.records.values()].sort((a, b) => b.chain.length - a.chain.length)) {
      if (record.expiresAtMs > nowMs) continue;
      const { sessions, snapshots } = this.users(record.id);
      if (sessions.length === 0 && snapshots.length === 0) {
        this.records.delete(record.id);
        gone.push(record);
      }
    }
    return gone;
  }

  view(record: SnapshotRecord, nowMs: number): SnapshotView {
    return {
      snapshot_id: record.id,
      pool: record.poolName,
      parent_session: record.parentSession,
      parent_snapshot: record.base,
      depth: record.chain.length,
      bytes: record.bytes,
      created_at_ms: record.createdAtMs,
      age_seconds: Math.max(0, Math.round((nowMs - record.createdAtMs) / 100) / 10),
      expires_at_ms: record.expiresAtMs,
      forks: record.forks,
      live_forks: this.users(record.id).sessions,
      cwd: record.state.cwd,
      background_processes: record.state.background,
    };
  }

  list(nowMs: number): SnapshotView[] {
    return this.all().map((r) => this.view(r, nowMs));
  }

  /** Every record, oldest first. */
  all(): SnapshotRecord[] {
    return [...this.records.values()].sort((a, b) => a.createdAtMs - b.createdAtMs);
  }

  /** Every record, emptied (the broker's close): the layers go with the store's sweep at the next start. */
  clear(): SnapshotRecord[] {
    const all = [...this.records.values()];
    this.records.clear();
    this.startedFrom.clear();
    return all;
  }
}
