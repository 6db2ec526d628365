/**
 * The shells execd opens in a sandbox beside its lease's own: one per command runner, bash session and
 * code context. Each is confined in a unit of its own (the backend's cgroup or tag for a "slot"),
 * named after the sandbox's slot: `<slotId>-x<n>`. Not the slot's own unit, because a backend treats
 * that one as ONE shell's: closing or killing there takes every member, the lease's bash included
 * (local cgroup.kill, the Docker pids cgroup's sweep), and a command's timeout would kill its
 * neighbours' processes too. Apart, a command's tree dies alone, and the sandbox's end closes every
 * companion (SandboxExecd.close, on the handle's `ended`).
 *
 * Unit names are reused (a freed number goes to the next shell of that slot) so that the backends'
 * per-unit cgroup directories stay bounded; a number is freed only once its shell is closed.
 */
import { ansiCQuote } from '../session/framing';
import type { SessionBackend, ShellProcess } from '../ports/backend';
import type { SandboxHandle } from '../sandbox/sandboxHandle';

export class CompanionUnits {
  private readonly used = new Map<string, Set<number>>();

  /** The lowest free unit number of `slotId`, taken. */
  take(slotId: string): number {
    let set = this.used.get(slotId);
    if (!set) this.used.set(slotId, (set = new Set()));
    let n = 0;
    while (set.has(n)) n++;
    set.add(n);
    return n;
  }

  free(slotId: string, n: number): void {
    const set = this.used.get(slotId);
    set?.delete(n);
    if (set?.size === 0) this.used.delete(slotId);
  }
}

/** A companion shell and the way to close it (its unit is freed once it is closed). */
export interface Companion {
  readonly shell: ShellProcess;
  close(): Promise<void>;
}

export async function openCompanion(backend: SessionBackend, units: CompanionUnits, handle: SandboxHandle): Promise<Companion> {
  const n = units.take(handle.slotId);
  let shell: ShellProcess;
  try {
    shell = await backend.openShell(handle.container, { slotId: `${handle.slotId}-x${n}`, companionOf: handle.slotId });
  } catch (err) {
    units.free(handle.slotId, n);
    throw err;
  }
  // A lifecycle sandbox's env (a warm container started before it existed): bash reads this line
  // before the session's framing starts, so every command of the shell has it.
  const env = Object.entries(handle.env ?? {});
  if (env.length > 0) shell.write(`builtin export ${env.map(([k, v]) => `${k}=${ansiCQuote(v)}`).join(' ')}\n`);
  let closing: Promise<void> | null = null;
  return {
    shell,
    close: () =>
      (closing ??= shell
        .close()
        .catch(() => undefined)
        .finally(() => units.free(handle.slotId, n))),
  };
}
