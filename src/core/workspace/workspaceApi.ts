/** The workspaces and their files, as the broker builds them from its pool, backend and configuration. */
import type { SessionBackend } from '../ports/backend';
import type { SessionPool } from '../pool/pool';
import { Workspaces, type WorkspacesOptions } from './workspaces';
import { WorkspaceFiles } from './workspaceFiles';
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';

/** The longest `line` of an output event (a flood without newlines is cut into lines this long). */
const MAX_LINE_CHARS = 4096;
/** A partial line (a `Password:` prompt) is emitted after this much silence. */
const IDLE_FLUSH_MS = 200;
const SHELL_START_TIMEOUT_MS = 20_000;

export interface WorkspaceApi {
  workspaces: Workspaces;
  files: WorkspaceFiles;
}

/** The broker's configuration as this reads it (config/workspaceConfig.ts documents each). */
export interface WorkspaceApiConfig {
  workspace: Pick<WorkspacesOptions, 'defaultWorkspace' | 'logEvents'> & { maxReadBytes: number };
}

/** `directory`: the broker's directory of live sandboxes, where each workspace is one. */
export function createWorkspaceApi(pool: SessionPool, backend: SessionBackend, config: WorkspaceApiConfig, maxOutputBytes: number, directory?: SandboxDirectory): WorkspaceApi {
  const workspaces = new Workspaces((signal) => pool.takeOut(signal), backend, {
    defaultWorkspace: config.workspace.defaultWorkspace,
    logEvents: config.workspace.logEvents,
    maxJobOutputBytes: maxOutputBytes,
    maxLineChars: MAX_LINE_CHARS,
    idleFlushMs: IDLE_FLUSH_MS,
    shellStartTimeoutMs: SHELL_START_TIMEOUT_MS,
  }, directory);
  return { workspaces, files: new WorkspaceFiles(backend.files, config.workspace.maxReadBytes) };
}
