/**
 * Images kept warm ahead of a run (POST /images): each is pulled in the background and its pool
 * started with the containers that hold the sessions asked (within the image's ceiling and the
 * node's budget). A warm-up is checked whole before anything starts (a bad reference or an image
 * not allowed refuses the request); its progress is read back with GET /images.
 */
import type { ImagePools } from './imagePools';
import type { ImageAccess } from './imageAccess';
import type { ImagePulls } from './imagePulls';
import { parseImageRef, type ImageRef } from './imageRef';
import { BrokerError, NotImplementedError, errorMessage } from '../../common/errors';

export type WarmupState = 'pulling' | 'starting' | 'warm' | 'failed';

export interface WarmupView {
  image: string;
  sessions: number;
  state: WarmupState;
  error: { code: string; detail: string } | null;
  askedAtMs: number;
}

/** Warm-ups remembered for GET /images (the newest). */
const WARMUPS_KEPT = 1024;

export class ImageWarmups {
  private readonly views = new Map<string, WarmupView>();

  constructor(
    private readonly pools: ImagePools,
    private readonly pulls: ImagePulls | null,
    private readonly access: ImageAccess,
    private readonly sessionsPerContainer: number,
    private readonly maxContainersPerImage: number,
  ) {}

  /** Checks every item, then starts them all; answers their views at once. */
  warm(items: ReadonlyArray<{ image: string; sessions: number }>): WarmupView[] {
    return this.check(items).map((ref, i) => this.start(ref, items[i].sessions));
  }

  /**
   * What `warm` checks before it starts anything, and nothing more: each reference and whether this
   * node may pull it (a gateway asks every node of a spread warm-up before it starts one, so a
   * refusal anywhere starts nothing anywhere).
   */
  check(items: ReadonlyArray<{ image: string }>): ImageRef[] {
    if (!this.pulls || !this.pools.onDemand) throw new NotImplementedError('this node pulls no images (BROKER_IMAGE_ALLOW is empty, or its backend runs none)');
    const refs = items.map((item) => parseImageRef(item.image));
    for (const ref of refs) if (!this.pools.configuredFor(ref)) this.access.check(ref);
    return refs;
  }

  list(): WarmupView[] {
    return [...this.views.values()];
  }

  private start(ref: ImageRef, sessions: number): WarmupView {
    const image = ref.canonical;
    const view: WarmupView = { image, sessions, state: 'pulling', error: null, askedAtMs: Date.now() };
    this.views.delete(image);
    this.views.set(image, view);
    if (this.views.size > WARMUPS_KEPT) this.views.delete(this.views.keys().next().value as string);
    void this.run(ref, sessions, view);
    return { ...view };
  }

  private async run(ref: ImageRef, sessions: number, view: WarmupView): Promise<void> {
    try {
      if (this.pools.configuredFor(ref)) {
        view.state = 'warm';
        return;
      }
      await this.pulls!.ensure(ref, true);
      if (sessions > 0) {
        view.state = 'starting';
        // Within the image's ceiling: a warm-up asks, the node's limits decide.
        const containers = Math.min(Math.ceil(sessions / this.sessionsPerContainer), this.maxContainersPerImage);
        const { entry } = await this.pools.poolFor(ref.canonical, containers, 0, Date.now() + 3_600_000);
        // Warm once its containers' shells are up: the pool's first fill is what an acquire finds.
        await entry.ready;
      }
      view.state = 'warm';
    } catch (err) {
      view.state = 'failed';
      view.error = { code: err instanceof BrokerError ? err.code : 'internal', detail: errorMessage(err) };
    }
  }
}
