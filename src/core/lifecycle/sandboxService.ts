/**
 * OpenSandbox's sandbox lifecycle, over the broker's pools: a sandbox whose image a pool of whole
 * containers serves (BROKER_POOLS, one session per container, a fresh container per lease) is one
 * of its warm leases, handed out at once; any other image gets a container of its own from the
 * backend. Sandboxes expire at their deadline (renewable), pause and resume where the backend can
 * freeze a container, and are sandboxes of the broker's directory while they live (the per-sandbox
 * APIs, execd's, find their handle there). A sandbox that is an isolated session can be snapshotted,
 * and a create can restore a snapshot (sandboxSnapshots.ts).
 * It knows no HTTP: the router (api/lifecycle/) maps requests onto it.
 */
import type { SessionBackend } from '../ports/backend';
import { DedicatedSandboxes } from './dedicatedSandboxes';
import { setEgress } from './sandboxEgress';
import type { PoolEntry, PoolRegistry } from '../pool/poolRegistry';
import type { SandboxHandle } from '../sandbox/sandboxHandle';
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';
import { SHELL_AND_FILES } from '../sandbox/sandbox';
import { lifecycleHandle } from './lifecycleHandle';
import { ansiCQuote } from '../session/framing';
import { SandboxNotFoundError, SandboxRecord, SandboxStateError, type SandboxFilter, type SandboxSpec, type SandboxState } from './sandboxRecord';
import type { TakenSlot } from '../pool/poolTypes';

export { SandboxNotFoundError, SandboxStateError, type SandboxFilter } from './sandboxRecord';
import { BadRequestError, BrokerError, NotImplementedError, errorMessage } from '../../common/errors';
import { newSessionId } from '../../common/ids';
import type { ImageRef } from '../images/imageRef';
import { sharedImageOf, type SandboxImages } from './sharedImage';

import { logger } from '../../common/logger';
import type { SnapshotService } from '../snapshots/snapshotService';
import type { SnapshotRecord } from '../snapshots/snapshotBook';
import { servedSnapshots, snapshotSandbox, takeFromSnapshot } from './sandboxSnapshots';

export interface SandboxServiceOptions {
  pools: PoolRegistry;
  /** Where dedicated containers start (the default pool's backend). */
  backend: SessionBackend;
  /** Dedicated containers at once (BROKER_SANDBOX_MAX_DEDICATED). */
  maxDedicated: number;
  /** A container of its own isolates its sandbox (Docker); locally it is the host, and paths stay confined. */
  containersIsolate: boolean;
  /** How often dedicated containers are checked (BROKER_HEALTH_INTERVAL); none: never. */
  healthCheckIntervalMs?: number;
  /** Images on demand: a create that a shared container can serve takes a lease of its image's pool. */
  images?: SandboxImages;
  /** The broker's directory of live sandboxes: each lifecycle sandbox is one until it ends. */
  directory?: SandboxDirectory;
  /** The node's snapshot store: a sandbox's snapshot is its session's, and a create may restore one (sandboxSnapshots.ts). */
  snapshots?: SnapshotService;
}

/** Ended sandboxes remembered for GET (oldest forgotten first). */
const ENDED_REMEMBERED = 1024;
/** The `export` of a create's env into a warm shell. */
const ENV_EXPORT_TIMEOUT_MS = 10_000;

export class SandboxService {
  private readonly live = new Map<string, SandboxRecord>();
  private readonly ended = new Map<string, SandboxRecord>();
  private readonly dedicated: DedicatedSandboxes;
  private closing = false;
  private readonly watch: NodeJS.Timeout | null = null;

  constructor(private readonly options: SandboxServiceOptions) {
    this.dedicated = new DedicatedSandboxes(options);
    if (options.healthCheckIntervalMs) {
      this.watch = setInterval(() => void this.checkDedicated(), options.healthCheckIntervalMs);
      this.watch.unref();
    }
  }

  /** `poolRef`: the named pool to serve it from (OpenSandbox's pool mode); else its image decides. */
  async create(spec: SandboxSpec, poolRef: string | null = null, signal?: AbortSignal): Promise<SandboxRecord> {
    if (this.closing) throw new BrokerError('unavailable', 'shutting_down', 'Broker is shutting down and creates no sandboxes');
    const id = newSessionId();
    const record = spec.snapshotId === undefined ? await this.start(id, spec, poolRef, signal) : await this.restore(id, spec.snapshotId, spec, signal);
    this.live.set(id, record);
    this.options.directory?.register({ id, kind: 'lifecycle', capabilities: SHELL_AND_FILES, ended: record.ending.signal, handle: () => this.resolve(id), describe: () => `${record.state}, ${record.place.kind}, ${record.spec.image}` });
    this.arm(record);
    return record;
  }

  /** A sandbox of a slot of the snapshot's pool, started from the snapshot. */
  private async restore(id: string, snapshotId: string, spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxRecord> {
    const restored = await takeFromSnapshot(servedSnapshots(this.options.snapshots), snapshotId, spec, signal);
    return this.fromTaken(id, restored.spec, restored.entry, restored.taken);
  }

  /** POST /v1/sandboxes/{id}/snapshots: its session's snapshot, named `name`. */
  snapshot(id: string, name: string | null): Promise<SnapshotRecord> {
    const record = this.get(id); // an unknown sandbox is a 404 before snapshots are a 501
    return snapshotSandbox(servedSnapshots(this.options.snapshots), record, name);
  }

  /** A sandbox of a pool (by `poolRef`, or a pool of whole containers of its image), of its image's pool, or a container of its own. */
  private async start(id: string, spec: SandboxSpec, poolRef: string | null, signal?: AbortSignal): Promise<SandboxRecord> {
    const entry = poolRef === null ? this.options.pools.wholeContainersOf(spec.image) : this.namedPool(poolRef);
    if (entry && poolRef !== null && spec.image !== '' && spec.image !== entry.image) {
      throw new BadRequestError(`image '${spec.image}' is not the image of pool '${poolRef}' ('${entry.image}'): give one of them, or the same`);
    }
    if (entry) spec = { ...spec, image: entry.image };
    const shared = entry ? null : sharedImageOf(this.options.images, spec, poolRef);
    if (spec.imageAuth && !shared) {
      throw new NotImplementedError('image.auth: registry credentials are served only for images this node pulls (BROKER_IMAGE_ALLOW), and only as the ones it has; this image is not pulled');
    }
    if (entry) return this.fromPool(id, spec, entry, signal);
    if (shared) return this.fromImagePool(id, spec, shared, signal);
    return this.dedicated.start(id, spec);
  }

  private namedPool(name: string): PoolEntry {
    const entry = this.options.pools.entries.find((e) => e.name === name);
    if (!entry || this.options.pools.wholeContainersOf(entry.image) !== entry) {
      throw new BadRequestError(`extensions.poolRef '${name}' names no pool of whole containers (BROKER_POOLS with sessions_per_container 1 and fresh_container)`);
    }
    return entry;
  }

  /** A lease of the image's pool (pulled and started on demand), taken out for the sandbox's life. */
  private async fromImagePool(id: string, spec: SandboxSpec, ref: ImageRef, signal?: AbortSignal): Promise<SandboxRecord> {
    const served = await this.options.images!.pools.serve(ref.canonical, { signal }, (pool) => pool.takeOut(signal));
    const entry: PoolEntry = served.configured ?? { name: `image ${ref.canonical}`, image: ref.canonical, pool: served.pool, sessionsPerContainer: served.pool.sessionsPerContainer, freshContainer: false };
    return this.fromTaken(id, { ...spec, image: ref.canonical }, entry, served.value);
  }

  private async fromPool(id: string, spec: SandboxSpec, entry: PoolEntry, signal?: AbortSignal): Promise<SandboxRecord> {
    return this.fromTaken(id, spec, entry, await entry.pool.takeOut(signal));
  }

  private async fromTaken(id: string, spec: SandboxSpec, entry: PoolEntry, taken: TakenSlot): Promise<SandboxRecord> {
    const names = Object.keys(spec.env);
    if (spec.network === 'none' || spec.egressRules) await setEgress(entry, taken, spec.network ?? 'full', spec.egressRules ?? []);
    if (names.length > 0) {
      // The warm shell started before this sandbox existed: its env comes in as exports.
      const line = 'export ' + names.map((k) => `${k}=${ansiCQuote(spec.env[k])}`).join(' ');
      try {
        const r = await entry.pool.execute(taken.sessionId, { command: line, timeoutMs: ENV_EXPORT_TIMEOUT_MS });
        if (r.returnCode !== 0) throw new BadRequestError(`env could not be exported: ${r.stderr.trim()}`);
      } catch (err) {
        taken.giveBack();
        throw err;
      }
    }
    return new SandboxRecord(id, spec, { kind: 'pool', entry, taken }, new Date());
  }

  knows(id: string): boolean {
    return this.live.has(id) || this.ended.has(id);
  }

  /** The sandbox of `id`, live or recently ended; a warm one whose container failed is Failed now. */
  get(id: string): SandboxRecord {
    const record = this.live.get(id) ?? this.ended.get(id);
    if (!record) throw new SandboxNotFoundError(id);
    if (record.place.kind === 'pool' && record.live) {
      const lost = record.place.taken.lostReason();
      if (lost !== null) this.end(record, 'Failed', 'runtime_error', `its container failed: ${lost}`);
    }
    return record;
  }

  list(filter: SandboxFilter): { items: SandboxRecord[]; totalItems: number } {
    const states = new Set(filter.states);
    const withEnded = states.has('Terminated') || states.has('Failed');
    const all = [...this.live.keys(), ...(withEnded ? this.ended.keys() : [])].map((id) => this.get(id));
    const matching = all.filter(
      (r) => (states.size === 0 ? r.live : states.has(r.state)) && Object.entries(filter.metadata).every(([k, v]) => r.spec.metadata[k] === v),
    );
    matching.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    const start = (filter.page - 1) * filter.pageSize;
    return { items: matching.slice(start, start + filter.pageSize), totalItems: matching.length };
  }

  /** A JSON merge patch of its metadata (a string sets, null deletes). */
  patchMetadata(id: string, patch: Readonly<Record<string, string | null>>): SandboxRecord {
    const record = this.get(id);
    if (!record.live) throw new SandboxStateError(record, 'change its metadata');
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete record.spec.metadata[k];
      else record.spec.metadata[k] = v;
    }
    return record;
  }

  /** Ends it now (its warm container is replaced, or its own container removed, in the background). Idempotent. */
  async delete(id: string): Promise<void> {
    const record = this.get(id);
    if (!record.live) return;
    await this.terminate(record, 'user_delete', 'deleted by its owner');
  }

  async pause(id: string): Promise<void> {
    const record = this.get(id);
    if (record.state !== 'Running' || record.busy) throw new SandboxStateError(record, 'pause it');
    if (record.place.kind === 'pool' && !record.place.entry.freshContainer && record.place.entry.sessionsPerContainer > 1) {
      throw new BrokerError('busy', 'sandbox_shared_container', `Sandbox ${id} lives in a shared container of its image's pool: pause freezes a whole container, so it is served only for a sandbox in a container of its own (create it with resourceLimits)`);
    }
    const backend = this.backendOf(record);
    const pausing = backend.pausing;
    if (!pausing) {
      throw new NotImplementedError(`pause is not served by the ${backend.kind} backend: its sandboxes are plain host processes with no container to freeze (the docker backend pauses)`);
    }
    await this.transition(record, () => pausing.pause(record.container));
    record.move('Paused', 'user_pause', 'paused by its owner');
  }

  async resume(id: string): Promise<void> {
    const record = this.get(id);
    if (record.state !== 'Paused' || record.busy) throw new SandboxStateError(record, 'resume it');
    // Only a backend that paused it has it Paused.
    await this.transition(record, () => this.backendOf(record).pausing!.resume(record.container));
    record.move('Running', 'user_resume', 'resumed by its owner');
  }

  /** A new expiry: in the future, after the current one (OpenSandbox's rule), within `maxMs` from now. */
  renew(id: string, expiresAt: Date, maxMs: number): Date {
    const record = this.get(id);
    if (!record.live) throw new SandboxStateError(record, 'renew it');
    const now = Date.now();
    if (expiresAt.getTime() <= now) throw new BadRequestError(`expiresAt ${expiresAt.toISOString()} is not in the future`);
    if (record.expiresAt && expiresAt.getTime() <= record.expiresAt.getTime()) {
      throw new BadRequestError(`expiresAt ${expiresAt.toISOString()} must be after the current one, ${record.expiresAt.toISOString()}`);
    }
    if (expiresAt.getTime() - now > maxMs) throw new BadRequestError(`expiresAt is more than ${maxMs / 1000} s away (BROKER_SANDBOX_MAX_TIMEOUT)`);
    record.expiresAt = expiresAt;
    this.arm(record);
    return expiresAt;
  }

  /**
   * Why the per-sandbox APIs find no live sandbox `id` that this service knows (terminated: 404,
   * failed: 410); null: not one of its.
   */
  explain(id: string): Error | null {
    if (!this.knows(id)) return null;
    try {
      this.resolve(id);
      return null;
    } catch (err) {
      return err as Error;
    }
  }

  /** A running sandbox's container and working directory, or the error its caller must see (paused: 409). */
  resolve(id: string): SandboxHandle {
    return lifecycleHandle(this.get(id), this.options.containersIsolate, this.options.backend);
  }

  /**
   * Where the broker reaches a running sandbox's ports (its container's address), or the error a
   * client must see: 409 paused, 404 with no network.
   */
  async addressOf(id: string): Promise<string> {
    const record = this.get(id);
    if (record.state !== 'Running' || record.busy) throw new SandboxStateError(record, 'reach its ports');
    const backend = this.backendOf(record);
    const address = await backend.containerAddress(record.container);
    if (address === null) {
      throw new BrokerError('not_found', 'endpoint_not_found', `Sandbox ${id} is not reachable: its container has no network address (BROKER_NETWORK_MODE=none?)`);
    }
    return address;
  }

  /** Live sandboxes by state and by where they live (for /health and /metrics). */
  counts(): { running: number; paused: number; pooled: number; dedicated: number } {
    const all = [...this.live.values()];
    return {
      running: all.filter((r) => r.state === 'Running').length,
      paused: all.filter((r) => r.state === 'Paused').length,
      pooled: all.filter((r) => r.place.kind === 'pool').length,
      dedicated: this.dedicated.size,
    };
  }

  /** Ends every sandbox (before the pools close: a warm one's lease goes back while they take it). */
  async close(): Promise<void> {
    this.closing = true;
    if (this.watch) clearInterval(this.watch);
    await Promise.all([...this.live.values()].map((r) => this.terminate(r, 'broker_shutdown', 'the broker shut down').catch(() => undefined)));
  }

  /** Dedicated containers have no pool to watch them: one that died fails its sandbox, as a warm one's does. */
  private async checkDedicated(): Promise<void> {
    const running = [...this.live.values()].filter((r) => r.place.kind === 'dedicated' && r.state === 'Running' && !r.busy);
    await Promise.all(
      running.map(async (record) => {
        const reason = await this.dedicated.failure(record.container);
        if (reason === null || !record.live || record.state !== 'Running' || record.busy) return;
        logger.warn({ sandbox: record.id, reason }, 'a dedicated sandbox container failed: the sandbox is Failed');
        this.end(record, 'Failed', 'runtime_error', `its container failed: ${reason}`);
        await this.dedicated.remove(record.container).catch((err) => logger.warn({ sandbox: record.id, err: errorMessage(err) }, 'removing a failed dedicated container failed'));
      }),
    );
  }

  private backendOf(record: SandboxRecord): SessionBackend {
    return (record.place.kind === 'pool' ? record.place.entry.backend : undefined) ?? this.options.backend;
  }

  private async transition(record: SandboxRecord, work: () => Promise<void>): Promise<void> {
    record.busy = true;
    try {
      await work();
    } finally {
      record.busy = false;
    }
  }

  /** (Re)sets the expiry timer: at expiresAt the sandbox is terminated and its slot reclaimed. */
  private arm(record: SandboxRecord): void {
    if (record.timer) clearTimeout(record.timer);
    record.timer = null;
    if (!record.expiresAt) return;
    const delayMs = Math.max(0, record.expiresAt.getTime() - Date.now());
    record.timer = setTimeout(() => {
      record.timer = null;
      if (!record.live) return;
      logger.info({ sandbox: record.id }, 'sandbox expired: terminating it');
      this.terminate(record, 'ttl_expiry', `expired at ${record.expiresAt?.toISOString()}`).catch((err) => logger.warn({ sandbox: record.id, err: errorMessage(err) }, 'expiry failed'));
    }, delayMs);
    record.timer.unref();
  }

  private async terminate(record: SandboxRecord, reason: string, message: string): Promise<void> {
    const wasPaused = record.state === 'Paused';
    this.end(record, 'Terminated', reason, message);
    const backend = this.backendOf(record);
    // A frozen container cannot be cleaned (its shell would not answer): thawed first.
    if (wasPaused) await backend.pausing?.resume(record.container).catch(() => undefined);
    if (record.place.kind === 'pool') {
      record.place.taken.giveBack();
      return;
    }
    await this.dedicated.remove(record.place.container);
  }

  private end(record: SandboxRecord, state: SandboxState, reason: string, message: string): void {
    if (record.timer) clearTimeout(record.timer);
    record.timer = null;
    record.move(state, reason, message);
    this.live.delete(record.id);
    this.ended.set(record.id, record);
    if (this.ended.size > ENDED_REMEMBERED) this.ended.delete(this.ended.keys().next().value as string);
    if (state === 'Failed' && record.place.kind === 'pool') record.place.taken.giveBack();
  }
}
