/**
 * The pool slot a workspace lives in, and its move to another one. A taken slot is lost when its
 * shell or container fails (the pool marks its lease broken, and its directory goes with it): the
 * workspace then gives it back, takes a new one from the pool (waiting like an acquire), and opens a
 * fresh terminal there.
 */
import type { ContainerRef, SessionBackend, TerminalProcess } from '../ports/backend';
import type { TakenSlot } from '../pool/poolTypes';
import { errorMessage } from '../../common/errors';

export type TakeSlot = (signal?: AbortSignal) => Promise<TakenSlot>;

/**
 * Where a workspace's terminal lives, as the workspace needs it: a pool slot that can move
 * (WorkspaceSlot), or a place that cannot, such as a sandbox group's dedicated container.
 */
export interface WorkspacePlace {
  readonly container: ContainerRef;
  readonly workdir: string;
  lostReason(): string | null;
  failure(): Promise<string | null>;
  onLost(listener: (reason: string) => void): void;
  open(env: Record<string, string>, size: { cols: number; rows: number }): Promise<TerminalProcess>;
  /** Gives the place up and takes another; throws where there is none to take. */
  move(): Promise<void>;
  giveBack(): void;
}

export class WorkspaceSlot implements WorkspacePlace {
  private lostListener: ((reason: string) => void) | null = null;

  constructor(
    private slot: TakenSlot,
    private readonly take: TakeSlot,
    private readonly backend: SessionBackend,
  ) {
    this.watch();
  }

  get container(): ContainerRef {
    return this.slot.container;
  }

  /** The pool lease the slot is taken as (a new one after each move). */
  get sessionId(): string {
    return this.slot.sessionId;
  }

  /** The workspace directory, as its container sees it. */
  get workdir(): string {
    return this.slot.workdir;
  }

  lostReason(): string | null {
    return this.slot.lostReason();
  }

  /**
   * Why the slot is lost, asking the container itself when the pool does not know yet: a terminal
   * that dies with its container may be seen before the pool's own shells or health check see it.
   */
  async failure(): Promise<string | null> {
    const known = this.slot.lostReason();
    if (known !== null) return known;
    const health = await this.backend.checkContainer(this.slot.container).catch((err: unknown) => ({ healthy: false, reason: errorMessage(err) }));
    return health.healthy ? this.slot.lostReason() : `container failed: ${health.reason ?? 'unhealthy'}`;
  }

  /** `listener` hears of the loss of this slot and of every later one (once each). */
  onLost(listener: (reason: string) => void): void {
    this.lostListener = listener;
  }

  open(env: Record<string, string>, size: { cols: number; rows: number }): Promise<TerminalProcess> {
    const { slot } = this;
    const { terminals } = this.backend;
    if (!terminals) throw new Error(`the ${this.backend.kind} backend opens no terminals`);
    return terminals.open(slot.container, { slotId: slot.slotId, cwd: slot.workdir, env, ...size });
  }

  /** Gives the current slot back and takes another (it throws when the pool has none or is closing). */
  async move(): Promise<void> {
    this.slot.giveBack();
    this.slot = await this.take();
    this.watch();
  }

  giveBack(): void {
    this.slot.giveBack();
  }

  private watch(): void {
    const slot = this.slot;
    slot.onLost((reason) => {
      if (this.slot === slot) this.lostListener?.(reason);
    });
  }
}
