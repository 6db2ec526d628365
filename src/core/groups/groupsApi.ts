/** The group service as the broker builds it from its configuration and its parts. */
import type { GroupEndpoints } from '../ports/groupEndpoints';
import { GroupService, type GroupServiceOptions } from './groupService';
import type { SessionBackend } from '../ports/backend';
import type { VectorStoreOpener } from '../ports/vectorStore';
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';

/** The terminal's event ring and line handling, as the workspaces have them. */
const MAX_LINE_CHARS = 4096;
const IDLE_FLUSH_MS = 200;
const SHELL_START_TIMEOUT_MS = 20_000;

/** The broker's configuration as this reads it (config/config.ts documents each). */
export interface GroupServiceConfig {
  groups: Pick<GroupServiceOptions, 'sandboxPorts' | 'hostRoot'> & { defaultDiskBytes: number; actionWaitMs: number; toolTimeoutMs: number };
  docker: { cpus: number; memoryBytes: number };
  workspace: { logEvents: number };
}

export function createGroupService(
  config: GroupServiceConfig,
  /** The backend that starts the sandboxes' containers; null: it starts none (501). */
  backend: SessionBackend | null,
  openStore: VectorStoreOpener,
  endpoints: GroupEndpoints,
  maxOutputBytes: number,
  directory?: SandboxDirectory,
): GroupService {
  const groups = config.groups;
  return new GroupService(backend, openStore, endpoints, {
    sandboxPorts: groups.sandboxPorts,
    hostRoot: groups.hostRoot,
    directory,
    defaults: { cpuCores: config.docker.cpus, memoryBytes: config.docker.memoryBytes, diskBytes: groups.defaultDiskBytes },
    timings: {
      actionWaitMs: groups.actionWaitMs,
      toolTimeoutMs: groups.toolTimeoutMs,
      workspace: { logEvents: config.workspace.logEvents, maxJobOutputBytes: maxOutputBytes, maxLineChars: MAX_LINE_CHARS, idleFlushMs: IDLE_FLUSH_MS, shellStartTimeoutMs: SHELL_START_TIMEOUT_MS },
    },
  });
}
