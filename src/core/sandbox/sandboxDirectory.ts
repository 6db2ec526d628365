/**
 * Every live sandbox of the broker by id, whatever its kind (sandbox.ts): each kind registers one
 * when it claims it and unregisters it when it ends. The per-sandbox APIs (execd's commands, files,
 * metrics; the lifecycle's egress) resolve the id in their path here. An id with no live sandbox
 * that has a shell is explained by the kinds that knew it (an ended lifecycle sandbox: 404
 * terminated or 410 failed; a released lease: 400), in the order they were added; the pools come
 * last, and they answer for an id nobody issued (404), as the pool API does.
 */
import { brokerError } from '../../common/errors';
import type { Sandbox, SandboxKind } from './sandbox';
import type { SandboxHandle } from './sandboxHandle';

/** No kind knows the id (a directory that no pool explains misses with this). */
export class UnknownSandboxError extends brokerError('not_found', 'sandbox_not_found', (id: string) => `Sandbox not found: ${id}`) {}

/** The error a caller must see for `id`, from a kind that knew it; null: not one of its. */
export type MissExplainer = (id: string) => Error | null;

export class SandboxDirectory {
  private readonly live = new Map<string, Sandbox>();
  private readonly explainers: MissExplainer[] = [];

  /**
   * Adds a claimed sandbox. `watchEnd`: it leaves on its own when its `ended` aborts; a pool lease
   * passes false and unregisters at its release instead (watching would make every lease's signal).
   * Throws when a live sandbox has the id already: two kinds must never share one.
   */
  register(sandbox: Sandbox, watchEnd = true): void {
    if (this.live.has(sandbox.id)) throw new Error(`a live ${this.live.get(sandbox.id)!.kind} sandbox has the id ${sandbox.id} already`);
    if (watchEnd) {
      if (sandbox.ended.aborted) return;
      sandbox.ended.addEventListener('abort', () => this.unregister(sandbox), { once: true });
    }
    this.live.set(sandbox.id, sandbox);
  }

  /** Removes it (ended); idempotent, and a later sandbox of the same id stays. */
  unregister(sandbox: Sandbox | string): void {
    const id = typeof sandbox === 'string' ? sandbox : sandbox.id;
    if (typeof sandbox === 'string' || this.live.get(id) === sandbox) this.live.delete(id);
  }

  /** Asked, in the order added, about an id that has no live sandbox with a shell. */
  explainMisses(explainer: MissExplainer): void {
    this.explainers.push(explainer);
  }

  /** The live sandbox of `id`, of any kind; undefined: none. */
  find(id: string): Sandbox | undefined {
    return this.live.get(id);
  }

  /** The live sandboxes, of one kind or of all, in the order they were claimed. */
  list(kind?: SandboxKind): Sandbox[] {
    const all = [...this.live.values()];
    return kind === undefined ? all : all.filter((s) => s.kind === kind);
  }

  /**
   * The handle of the live sandbox of `id` that has a shell, for the per-sandbox APIs, or the error
   * their caller must see. A sandbox whose shell only its own API reaches (a group member's or a
   * task's container where the backend serves no shells) is no more there for them than an unknown id.
   */
  resolve(id: string): SandboxHandle {
    const sandbox = this.live.get(id);
    if (sandbox?.capabilities.shell) return sandbox.handle();
    throw this.explain(id);
  }

  private explain(id: string): Error {
    for (const explainer of this.explainers) {
      const err = explainer(id);
      if (err) return err;
    }
    return new UnknownSandboxError(id);
  }
}
