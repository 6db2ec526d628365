/**
 * The broker's workspaces: a default one (created on first use unless BROKER_DEFAULT_WORKSPACE=0)
 * and named ones. Each takes one slot out of the pool for its life and gives it back when it ends.
 */
import { randomBytes } from 'node:crypto';
import type { SessionBackend } from '../ports/backend';
import type { TakenSlot } from '../pool/pool';
import { brokerError, NotSupportedError, ShuttingDownError } from '../../common/errors';
import { nodeScopedId } from '../../common/ids';
import { Workspace } from './workspace';
import type { WorkspaceLimits } from './workspaceTypes';
import { WorkspaceSlot } from './workspaceSlot';
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';
import { SHELL_AND_FILES, type Sandbox } from '../sandbox/sandbox';

export const DEFAULT_WORKSPACE_ID = 'default';

export class WorkspaceNotFoundError extends brokerError('not_found', 'workspace_not_found', (id: string, why = 'no such workspace') => `Workspace not found: ${id} (${why})`) {}

export interface WorkspacesOptions extends WorkspaceLimits {
  defaultWorkspace: boolean;
}

export class Workspaces {
  private readonly live = new Map<string, Workspace>();
  /** Workspaces being created, so that two first uses of the default make one. */
  private readonly creating = new Map<string, Promise<Workspace>>();
  private readonly slots = new Map<Workspace, WorkspaceSlot>();
  private readonly ends = new Map<Workspace, AbortController>();
  private closing = false;

  /** `directory`: where each workspace is a sandbox while it lives (execd reaches it by its id). */
  constructor(
    private readonly takeSlot: (signal?: AbortSignal) => Promise<TakenSlot>,
    private readonly backend: SessionBackend,
    private readonly options: WorkspacesOptions,
    private readonly directory?: SandboxDirectory,
  ) {}

  /** The workspace of `id` (null: the default, created on first use). */
  async resolve(id: string | null): Promise<Workspace> {
    if (id !== null) return this.get(id);
    if (!this.options.defaultWorkspace) throw new WorkspaceNotFoundError(DEFAULT_WORKSPACE_ID, 'the default workspace is off: BROKER_DEFAULT_WORKSPACE=0');
    return this.live.get(DEFAULT_WORKSPACE_ID) ?? this.create(DEFAULT_WORKSPACE_ID);
  }

  /** A live workspace, or 404 (never creates one: the root paths' default is made by `resolve`). */
  get(id: string): Workspace {
    const ws = this.live.get(id);
    if (!ws) throw new WorkspaceNotFoundError(id);
    return ws;
  }

  has(id: string | null): boolean {
    return id === null ? this.options.defaultWorkspace : this.live.has(id);
  }

  list(): Workspace[] {
    return [...this.live.values()];
  }

  create(id: string = nodeScopedId(randomBytes(16).toString('hex')), signal?: AbortSignal): Promise<Workspace> {
    const pending = this.creating.get(id);
    if (pending) return pending;
    const made = this.make(id, signal).finally(() => this.creating.delete(id));
    this.creating.set(id, made);
    return made;
  }

  private async make(id: string, signal?: AbortSignal): Promise<Workspace> {
    if (this.closing) throw new ShuttingDownError();
    if (!this.backend.terminals) throw new NotSupportedError(`the ${this.backend.kind} backend opens no terminals`);
    const slot = new WorkspaceSlot(await this.takeSlot(signal), (s) => this.takeSlot(s), this.backend);
    const ws = new Workspace(id, slot, this.options);
    try {
      await ws.start();
    } catch (err) {
      await ws.close();
      slot.giveBack();
      throw err;
    }
    if (this.closing) {
      await ws.close();
      slot.giveBack();
      throw new ShuttingDownError();
    }
    this.live.set(id, ws);
    this.slots.set(ws, slot);
    this.directory?.register(this.sandboxOf(ws, slot));
    return ws;
  }

  /**
   * The workspace as a sandbox: the place of its slot's lease under the workspace's id. Its handle
   * ends with that lease: when the workspace moves to another slot, what execd opened in the old one
   * is closed, and the next request finds the new one.
   */
  private sandboxOf(ws: Workspace, slot: WorkspaceSlot): Sandbox {
    const end = new AbortController();
    this.ends.set(ws, end);
    const directory = this.directory!;
    const describe = (): string => `in ${ws.workdir}${ws.runningJobId === null ? '' : `, job ${ws.runningJobId} running`}`;
    return { id: ws.id, kind: 'workspace', capabilities: SHELL_AND_FILES, ended: end.signal, handle: () => ({ ...directory.resolve(slot.sessionId), id: ws.id }), describe };
  }

  async end(id: string): Promise<void> {
    const ws = this.get(id);
    this.live.delete(id);
    this.ends.get(ws)?.abort();
    this.ends.delete(ws);
    await ws.close();
    this.slots.get(ws)?.giveBack();
    this.slots.delete(ws);
  }

  /** Ends every workspace (before the pool closes, so their slots go back to it). */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.allSettled([...this.creating.values()]);
    await Promise.all([...this.live.keys()].map((id) => this.end(id).catch(() => undefined)));
  }
}
