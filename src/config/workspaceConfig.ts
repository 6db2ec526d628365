/**
 * Settings of the shared PTY workspaces (the workspace API) and their WebSocket viewers. Resolved with the
 * rest of the configuration (config.ts), validated the same way.
 */
import { flag, int, type Env } from './envValues';

export interface WorkspaceConfig {
  /** BROKER_DEFAULT_WORKSPACE: the workspace API's root paths serve a default workspace, made on first use. */
  defaultWorkspace: boolean;
  /** BROKER_WORKSPACE_LOG_EVENTS: events each workspace keeps for /api/workspace/logs and `since` replays. */
  logEvents: number;
  /** BROKER_WORKSPACE_MAX_READ_BYTES: the largest /api/read answer (413 beyond) and read-partial chunk. */
  maxReadBytes: number;
  /** BROKER_WORKSPACE_VIEWER_BUFFER_BYTES: an events viewer with more unsent than this is behind (it catches up from the ring). */
  viewerBufferBytes: number;
  /**
   * BROKER_WORKSPACE_TERMINAL_BUFFER_BYTES: a terminal viewer's share of a burst of bulk output, and
   * the most it may hold unsent; past either it is behind (it catches up with a redraw).
   */
  terminalBufferBytes: number;
  /** BROKER_WORKSPACE_VIEWER_STALL_MS: a viewer still behind this long after falling behind does not read, and is cut. */
  viewerStallMs: number;
  /** BROKER_WORKSPACE_PING_MS: workspace WebSockets are pinged this often; one that has not answered a ping by the next is cut. */
  pingMs: number;
}

export function loadWorkspaceConfig(env: Env): WorkspaceConfig {
  return {
    defaultWorkspace: flag(env, 'BROKER_DEFAULT_WORKSPACE', true),
    logEvents: int(env, 'BROKER_WORKSPACE_LOG_EVENTS', 10_000, { min: 16, max: 1_000_000 }),
    maxReadBytes: int(env, 'BROKER_WORKSPACE_MAX_READ_BYTES', 16 * 1024 * 1024, { min: 1024, max: 1024 * 1024 * 1024 }),
    viewerBufferBytes: int(env, 'BROKER_WORKSPACE_VIEWER_BUFFER_BYTES', 8 * 1024 * 1024, { min: 64 * 1024 }),
    // A person reads a screen, not 40 MB/s: past a screenful or so behind, a redraw serves them better than the backlog.
    terminalBufferBytes: int(env, 'BROKER_WORKSPACE_TERMINAL_BUFFER_BYTES', 64 * 1024, { min: 16 * 1024 }),
    viewerStallMs: int(env, 'BROKER_WORKSPACE_VIEWER_STALL_MS', 10_000, { min: 100, max: 3_600_000 }),
    pingMs: int(env, 'BROKER_WORKSPACE_PING_MS', 15_000, { min: 100, max: 3_600_000 }),
  };
}
