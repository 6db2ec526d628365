/**
 * The node's pulls: one per image at a time, shared by every acquire and warm-up that waits for it;
 * a failed one fails them all with one clear error and is forgotten (the next acquire tries again).
 * A pull that moves nothing for the stall time, or takes longer than the pull timeout, is ended as
 * the registry's failure. The disk budget is kept around each pull (imageDisk.ts): room is made
 * before it and as the engine learns the sizes of the layers it fetches, and checked once the image
 * is there; a pull that cannot fit is ended and what it brought removed.
 */
import type { ImageStore, PullProgress } from '../ports/imageStore';
import { PullFailure } from '../ports/imageStore';
import type { ImageAccess } from './imageAccess';
import type { ImageDisk } from './imageDisk';
import { canonicalImage, parseImageRef, type ImageRef } from './imageRef';
import { ImageNotFoundError, ImageTooLargeError, PullFailedError, RegistryDeniedError, imageDiskFull, registryUnavailable } from './imageErrors';
import { BrokerError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';

export interface PullLimits {
  pullTimeoutMs: number;
  pullStallMs: number;
}

/** What /metrics counts of pulls and evictions (metrics/imageMetrics.ts). */
export interface PullEvents {
  pulled(result: 'ok' | 'failed', durationMs: number, bytes: number): void;
  evicted(ref: string, bytes: number): void;
}

export const NO_PULL_EVENTS: PullEvents = { pulled: () => undefined, evicted: () => undefined };

interface Flight {
  promise: Promise<boolean>;
  startedAtMs: number;
  progress: PullProgress;
  /** Bytes of room made for it so far (its layers' sizes as learnt). */
  reservedBytes: number;
}

/** A pull in flight, or the last failure of one, for GET /images. */
export interface PullView {
  image: string;
  startedAtMs: number;
  bytesTotal: number;
  bytesDone: number;
}

export interface FailedPull {
  image: string;
  atMs: number;
  code: string;
  detail: string;
}

/** Failed pulls remembered for GET /images (the newest), and for how long. */
const FAILURES_KEPT = 64;
const FAILURE_KEPT_MS = 10 * 60_000;

export class ImagePulls {
  private readonly flights = new Map<string, Flight>();
  private readonly failures = new Map<string, FailedPull>();
  private diskTurn: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: ImageStore,
    readonly disk: ImageDisk,
    private readonly access: ImageAccess,
    private readonly limits: PullLimits,
    /** Images that must stay: a container runs them, an acquire waits for them, a configured pool runs them. */
    private readonly pinned: () => ReadonlySet<string>,
    private readonly events: PullEvents = NO_PULL_EVENTS,
  ) {}

  /** Takes on the allowed images the engine already holds (pulled by an earlier broker, or loaded by hand). */
  async start(): Promise<void> {
    const held = await this.store.list((raw) => {
      const canonical = canonicalImage(raw);
      return canonical !== null && this.access.allows(parseImageRef(canonical));
    });
    for (const image of held) this.disk.add(image, 0);
    if (held.length > 0) logger.info({ images: held.length, bytes: this.disk.usedBytes() }, 'images held on the engine taken on');
  }

  get inFlight(): number {
    return this.flights.size;
  }

  isPulling(ref: string): boolean {
    return this.flights.has(ref);
  }

  /** The pull of `ref` in flight, if any. */
  flight(ref: string): PullView | null {
    const f = this.flights.get(ref);
    return f ? { image: ref, startedAtMs: f.startedAtMs, bytesTotal: f.progress.bytesTotal, bytesDone: f.progress.bytesDone } : null;
  }

  pulling(): PullView[] {
    return [...this.flights.keys()].map((ref) => this.flight(ref)!);
  }

  recentFailures(nowMs = Date.now()): FailedPull[] {
    for (const [ref, f] of this.failures) if (nowMs - f.atMs > FAILURE_KEPT_MS) this.failures.delete(ref);
    return [...this.failures.values()];
  }

  /**
   * Resolves once the engine holds `ref`: true when it waited for a pull (this call's or another's).
   * `verify`: asks the engine whether an image counted as held is still there.
   * Rejects with the pull's error, the same for every waiter.
   */
  async ensure(ref: ImageRef, verify = false): Promise<boolean> {
    const image = ref.canonical;
    // `verify` (a pool of it is about to start): an image removed behind the node's back is pulled again.
    if (this.disk.has(image) && verify && !this.flights.has(image) && (await this.store.inspect(image).catch(() => null)) === null) this.disk.remove(image);
    if (this.disk.has(image)) {
      this.disk.touch(image, Date.now());
      return false;
    }
    const running = this.flights.get(image);
    if (running) return running.promise.then(() => true);
    const flight: Flight = { promise: Promise.resolve(false), startedAtMs: Date.now(), progress: { bytesTotal: 0, bytesDone: 0 }, reservedBytes: 0 };
    flight.promise = this.fetch(ref, flight).finally(() => this.flights.delete(image));
    this.flights.set(image, flight);
    flight.promise.then(
      () => this.failures.delete(image),
      (err: unknown) => this.remember(image, err),
    );
    return flight.promise;
  }

  private remember(image: string, err: unknown): void {
    this.failures.delete(image);
    this.failures.set(image, { image, atMs: Date.now(), code: err instanceof BrokerError ? err.code : 'internal', detail: errorMessage(err) });
    if (this.failures.size > FAILURES_KEPT) this.failures.delete(this.failures.keys().next().value as string);
  }

  /** The engine may hold it already (not counted yet); else a pull, under the budget. */
  private async fetch(ref: ImageRef, flight: Flight): Promise<boolean> {
    const image = ref.canonical;
    const there = await this.store.inspect(image);
    if (there) {
      this.disk.add(there, Date.now());
      await this.fit(image, 0);
      this.disk.touch(image, Date.now());
      return false;
    }
    const started = Date.now();
    try {
      await this.pull(ref, flight);
    } catch (err) {
      this.events.pulled('failed', Date.now() - started, flight.progress.bytesDone);
      throw err;
    }
    this.events.pulled('ok', Date.now() - started, flight.progress.bytesTotal);
    const held = await this.store.inspect(image);
    if (!held) throw new PullFailedError(image, 'the engine does not hold it after the pull');
    this.disk.add(held, Date.now());
    try {
      await this.fit(image, 0);
    } catch (err) {
      // It came in, but cannot stay: what it brought goes, and nothing is left behind.
      this.disk.remove(image);
      await this.store.remove(image).catch(() => false);
      throw err;
    }
    this.disk.touch(image, Date.now());
    return true;
  }

  private async pull(ref: ImageRef, flight: Flight): Promise<void> {
    const image = ref.canonical;
    const control = new AbortController();
    let lastMoveMs = Date.now();
    let seen = -1;
    const stall = setInterval(() => {
      if (Date.now() - lastMoveMs >= this.limits.pullStallMs) control.abort(registryUnavailable(image, ref.registry, `the pull moved nothing for ${this.limits.pullStallMs / 1000} s`));
    }, Math.min(1000, this.limits.pullStallMs)).unref();
    const total = setTimeout(() => control.abort(registryUnavailable(image, ref.registry, `the pull took longer than ${this.limits.pullTimeoutMs / 1000} s`)), this.limits.pullTimeoutMs).unref();
    const onProgress = (progress: PullProgress): void => {
      flight.progress = progress;
      const moved = progress.bytesDone + progress.bytesTotal;
      if (moved !== seen) lastMoveMs = Date.now();
      seen = moved;
      if (progress.bytesTotal > flight.reservedBytes) {
        flight.reservedBytes = progress.bytesTotal;
        this.fit(image, progress.bytesTotal).catch((err: unknown) => control.abort(err));
      }
    };
    try {
      await this.fit(image, 0);
      await this.store.pull(image, this.access.credentialsFor(ref), onProgress, control.signal);
      if (control.signal.aborted) throw control.signal.reason;
    } catch (err) {
      if (control.signal.aborted && control.signal.reason instanceof BrokerError) throw control.signal.reason;
      throw this.answer(ref, err);
    } finally {
      clearInterval(stall);
      clearTimeout(total);
    }
  }

  /** A PullFailure in the answer a client reads. */
  private answer(ref: ImageRef, err: unknown): BrokerError {
    if (err instanceof BrokerError) return err;
    if (!(err instanceof PullFailure)) return new PullFailedError(ref.canonical, errorMessage(err));
    switch (err.reason) {
      case 'not_found':
        return new ImageNotFoundError(ref.canonical, err.message);
      case 'denied':
        return new RegistryDeniedError(ref.canonical, ref.registry, err.message);
      case 'unreachable':
        return registryUnavailable(ref.canonical, ref.registry, err.message);
      case 'failed':
        return new PullFailedError(ref.canonical, err.message);
    }
  }

  /**
   * Makes room for `extraBytes` more (beside the room other pulls in flight took), removing the least
   * recently used images nothing pins; throws the answer when it cannot. One at a time: two pulls
   * must not both count the same freed bytes.
   */
  private fit(image: string, extraBytes: number): Promise<void> {
    const turn = this.diskTurn.then(() => this.fitNow(image, extraBytes));
    this.diskTurn = turn.catch(() => undefined);
    return turn;
  }

  private async fitNow(image: string, extraBytes: number): Promise<void> {
    const others = [...this.flights.entries()].filter(([ref]) => ref !== image).reduce((n, [, f]) => n + f.reservedBytes, 0);
    const pinned = new Set([...this.pinned(), ...this.flights.keys(), image]);
    const budget = this.disk.budgetBytes;
    const own = this.disk.has(image) ? this.disk.ownBytes(image) : 0;
    if (extraBytes + own > budget) throw new ImageTooLargeError(image, extraBytes + own, budget);
    const plan = this.disk.plan(extraBytes + others, pinned);
    if (plan === null) throw imageDiskFull(image, extraBytes + own, budget, this.disk.pinnedBytes(pinned) - own);
    for (const ref of plan) {
      const bytes = this.disk.ownBytes(ref);
      if (!(await this.store.remove(ref).catch(() => false))) continue;
      this.disk.remove(ref);
      this.events.evicted(ref, bytes);
      logger.info({ image: ref, bytes }, 'image evicted (least recently used, over the disk budget)');
    }
    if (this.disk.usedBytes() + extraBytes + others > budget) throw imageDiskFull(image, extraBytes + own, budget, this.disk.pinnedBytes(pinned) - own);
  }
}
