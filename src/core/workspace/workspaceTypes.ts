/** What a workspace (workspace.ts) is configured with, answers, and throws. */
import { BrokerError, brokerError } from '../../common/errors';

export type JobSource = 'api' | 'terminal';

/** A command runs: the next one waits (409), and learns which job to wait for or interrupt. */
export class WorkspaceBusyError extends BrokerError {
  constructor(workspaceId: string, jobId: string) {
    super('busy', 'workspace_busy', `Workspace ${workspaceId} is running job ${jobId}; wait for its exit event or POST /api/interrupt`);
    this.fields = { job_id: jobId };
  }
}

export class WorkspaceUnavailableError extends brokerError('unavailable', 'workspace_unavailable', (workspaceId: string, why: string) => `Workspace ${workspaceId} has no shell ready (${why}); retry`) {}

export interface WorkspaceLimits {
  logEvents: number;
  /** Output kept per job for execute's `stdout` (beyond it the rest streams only as events). */
  maxJobOutputBytes: number;
  /** The longest `line` of an output event; longer lines are cut. */
  maxLineChars: number;
  /** A partial line is emitted after this much silence. */
  idleFlushMs: number;
  /** How long a fresh shell may take to show its first prompt. */
  shellStartTimeoutMs: number;
}

export interface ExecuteAnswer {
  job_id: string;
  command: string;
  returncode: number | null;
  stdout: string;
}
