/**
 * execd for every sandbox: finds (or makes) a sandbox's SandboxExecd from its handle, and closes it
 * when the sandbox ends (its handle's `ended`), so that nothing it started outlives the sandbox.
 * Backend-neutral: every process runs in a shell of the sandbox's own SessionBackend (companionShells.ts).
 */
import type { SandboxHandle } from '../sandbox/sandboxHandle';
import { SessionNotInUseError } from '../../common/errors';
import { CompanionUnits } from './companionShells';
import { SandboxExecd, type ExecdLimits } from './sandboxExecd';

export { type ExecdLimits } from './sandboxExecd';

export class ExecdService {
  private readonly sandboxes = new Map<string, SandboxExecd>();
  private readonly units = new CompanionUnits();
  private closed = false;

  constructor(readonly limits: ExecdLimits) {}

  /** The sandbox's execd, made on its first request. */
  of(handle: SandboxHandle): SandboxExecd {
    const known = this.sandboxes.get(handle.id);
    if (known) return known;
    if (handle.ended.aborted || this.closed) throw new SessionNotInUseError(handle.id, 'ended');
    // Its shells are its own backend's: a named pool's container belongs to that pool's.
    const execd = new SandboxExecd(handle, handle.backend, this.units, this.limits);
    this.sandboxes.set(handle.id, execd);
    handle.ended.addEventListener('abort', () => this.end(handle.id, execd), { once: true });
    return execd;
  }

  /** Sandboxes with execd state now (tests and diagnostics). */
  get activeSandboxes(): number {
    return this.sandboxes.size;
  }

  /** The sandboxes with execd state now and what each holds (the dashboard lists them). */
  list(): { id: string; detail: string }[] {
    return [...this.sandboxes].map(([id, execd]) => ({ id, detail: execd.summary() }));
  }

  /** What execd holds in sandbox `id` now, in a line; null: nothing (the dashboard's sandbox list). */
  summaryOf(id: string): string | null {
    return this.sandboxes.get(id)?.summary() ?? null;
  }

  /** Companion shells sandbox `id` has open now, the ones opening included (tests and diagnostics). */
  openShells(id: string): number {
    return this.sandboxes.get(id)?.openShells ?? 0;
  }

  /** Closes every sandbox's shells (the broker is shutting down). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.sandboxes].map(([id, execd]) => this.end(id, execd)));
  }

  private end(id: string, execd: SandboxExecd): Promise<void> {
    if (this.sandboxes.get(id) === execd) this.sandboxes.delete(id);
    return execd.close();
  }
}
