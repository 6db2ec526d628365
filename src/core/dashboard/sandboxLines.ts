/**
 * The dashboard's sandboxes, from the broker's directory of live sandboxes (every kind alike): each
 * with its own line (Sandbox.describe) and what execd holds in it. A sandbox with nothing of its own
 * to say and no execd state (a pool lease: the frame's leases list it) is left out, so that a pool of
 * thousands of leases keeps the list short.
 */
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';
import type { SandboxSummary } from './dashboardFrame';

/** Sandboxes listed in a frame (oldest claimed first). */
export const SANDBOXES_LISTED = 500;

/** `execdHolds`: what execd holds in the sandbox of an id, in a line; null: nothing. */
export function sandboxLines(directory: SandboxDirectory, execdHolds: (id: string) => string | null): SandboxSummary[] {
  const lines: SandboxSummary[] = [];
  for (const sandbox of directory.list()) {
    if (lines.length === SANDBOXES_LISTED) break;
    const own = sandbox.describe?.() ?? null;
    const held = execdHolds(sandbox.id);
    if (own === null && held === null) continue;
    const detail = [own, held === null ? null : `execd: ${held}`].filter((part) => part !== null).join('; ');
    lines.push({ kind: sandbox.kind, id: sandbox.id, detail });
  }
  return lines;
}
