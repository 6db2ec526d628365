/**
 * The dashboard's live feed: once a second it looks at the containers (a replacement is noted even
 * with no viewer) and, when someone watches, builds one frame (dashboardFrame.ts) for all of them.
 * Viewers get a frame at once when they subscribe. Knows no HTTP: the API's WebSocket subscribes.
 */
import { ContainerWatch } from './containerWatch';
import { dashboardFrame, type DashboardSources } from './dashboardFrame';

export type FrameListener = (frame: Record<string, unknown>) => void;

const TICK_MS = 1_000;

export class DashboardFeed {
  private readonly watch = new ContainerWatch();
  private readonly listeners = new Set<FrameListener>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly sources: DashboardSources,
    private readonly tickMs = TICK_MS,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), this.tickMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.listeners.clear();
  }

  /** The frame now (GET /admin/state, and each viewer's first). */
  frame(): Record<string, unknown> {
    this.look();
    return dashboardFrame(this.sources, this.watch.replacements);
  }

  /** `listener` gets a frame now and one a second after; the returned function ends that. */
  subscribe(listener: FrameListener): () => void {
    this.listeners.add(listener);
    listener(this.frame());
    return () => this.listeners.delete(listener);
  }

  get viewers(): number {
    return this.listeners.size;
  }

  private look(): void {
    for (const { name, pool } of this.sources.pools()) {
      for (const r of this.watch.look(name, pool.containers, Date.now())) {
        this.sources.activity.error('container_replaced', `container ${r.container} of pool ${r.pool} replaced: ${r.reason}`, r.atMs);
      }
    }
  }

  private tick(): void {
    this.look();
    if (this.listeners.size === 0) return;
    const frame = dashboardFrame(this.sources, this.watch.replacements);
    for (const listener of this.listeners) listener(frame);
  }
}
