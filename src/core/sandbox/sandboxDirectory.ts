/**
 * The one SandboxDirectory the per-sandbox APIs (execd) are given: a lifecycle sandbox's id resolves
 * to its sandbox (a warm container's lease, or a container of its own), any other id to a pool
 * lease (pool.site through the registry), whose errors answer an id nobody issued.
 */
import type { SandboxDirectory, SandboxHandle } from './sandboxHandle';

export interface KnowingDirectory extends SandboxDirectory {
  /** Whether `id` is one of its own (live or ended). */
  knows(id: string): boolean;
}

export function composeDirectories(first: KnowingDirectory, rest: SandboxDirectory): SandboxDirectory {
  return {
    resolve(id: string): SandboxHandle {
      return first.knows(id) ? first.resolve(id) : rest.resolve(id);
    },
  };
}
