/**
 * One sandbox of a group: its dedicated container, a terminal (a real PTY, the workspace machinery:
 * core/workspace/workspace.ts with its shell integration marks for job ends and exit codes), its
 * tools, and its actions. Knows no HTTP: the Sandbox API (api/groups/sandboxApiRoutes.ts) calls it.
 *
 * - `bash` actions are typed into the terminal; one still running after the action wait answers
 *   with the output so far and `terminal_still_running: true`; /input and /output go on with it.
 * - tool actions run the tool's function with the sandbox's python3, outside the terminal (their
 *   stdout and stderr apart).
 * - /output is the terminal's job output since the last read; an observation counts as a read.
 * - a terminal shell that dies is replaced by the workspace at once; the next observation (or
 *   /output) says so in its stderr.
 * - a terminal shell that dies with its container fails the sandbox: the action running then, and
 *   every later one, answers that the container failed (its /health says so too) until the
 *   sandbox is stopped and started again. No shell is restarted in a dead container.
 */
import type { ContainerHealth } from '../ports/backend';
import { BrokerError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';
import { STILL_RUNNING, Workspace } from '../workspace/workspace';
import type { WorkspaceLimits } from '../workspace/workspaceTypes';
import type { WorkspacePlace } from '../workspace/workspaceSlot';
import type { WorkspaceEvent } from '../workspace/eventRing';
import type { StartedSandboxContainer } from '../ports/containers';
import { TOOL_RUNNER_FILE, TOOLS_SUBDIR } from './toolRunner';

export interface Observation {
  stdout: string;
  stderr: string;
  terminal_still_running: boolean;
  /** The bash command's or the tool's exit status; null while it runs (or when it never ran). */
  exit_code: number | null;
}

export interface Action {
  name: string;
  args: unknown;
}

export interface SandboxTimings {
  /** How long an action may run before its observation answers `terminal_still_running`. */
  actionWaitMs: number;
  /** A tool still running after this is killed. */
  toolTimeoutMs: number;
  workspace: WorkspaceLimits;
}

export class GroupSandbox {
  private workspace: Workspace;
  /** The next terminal event /output has not returned. */
  private cursor = 0;
  /** Said in the next observation: the terminal's shell died and a fresh one took its place. */
  private notices: string[] = [];
  private closed = false;
  /** Why its container failed under it (then nothing runs in it any more); null while it serves. */
  private failedReason: string | null = null;
  /** Shells that ended and were replaced so far. */
  private shellRestarts = 0;

  constructor(
    readonly id: string,
    readonly container: StartedSandboxContainer,
    readonly tools: readonly string[],
    private readonly timings: SandboxTimings,
  ) {
    this.workspace = new Workspace(id, fixedPlace(container, (reason) => this.fail(reason)), timings.workspace);
    this.workspace.events.subscribe(null, (e) => this.onEvent(e), () => undefined);
  }

  async start(): Promise<void> {
    await this.workspace.start();
    this.cursor = this.workspace.events.next;
  }

  /** Runs the actions in order, one observation each; an action's failure is its observation, never a throw. */
  async execute(actions: readonly Action[]): Promise<Observation[]> {
    const observations: Observation[] = [];
    for (const action of actions) observations.push(this.withNotices(await this.run(action)));
    return observations;
  }

  input(text: string): void {
    this.workspace.input(text);
  }

  /** The terminal's job output since the last read, and whether a job still runs. */
  output(): Omit<Observation, 'exit_code'> {
    const { events, dropped } = this.unread();
    const lines = events.filter((e) => e.type === 'output').map((e) => `${String(e.line)}\n`);
    const head = dropped > 0 ? `[${dropped} earlier terminal events were dropped before this read]\n` : '';
    const { stderr } = this.withNotices({ stdout: '', stderr: '', terminal_still_running: false, exit_code: null });
    return { stdout: head + lines.join(''), stderr, terminal_still_running: this.workspace.runningJobId !== null };
  }

  async health(): Promise<ContainerHealth> {
    if (this.closed) return { healthy: false, reason: 'the sandbox was stopped' };
    const container = await this.container.check();
    if (!container.healthy) return container;
    if (!this.workspace.shellOpen) return { healthy: false, reason: 'the terminal has no shell (a fresh one is starting)' };
    return { healthy: true };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.workspace.close();
  }

  private async run(action: Action): Promise<Observation> {
    if (this.failedReason !== null) return failed(this.failure());
    if (action.name === 'bash') return this.bash(action.args);
    if (this.tools.includes(action.name)) return this.tool(action.name, action.args);
    const known = ['bash', ...this.tools].join(', ');
    return failed(`unknown function '${action.name}': this sandbox has ${known}`);
  }

  private async bash(args: unknown): Promise<Observation> {
    const command = args !== null && typeof args === 'object' ? (args as Record<string, unknown>).command : undefined;
    if (typeof command !== 'string') return failed("bash needs 'args.command', a string");
    try {
      const restartsBefore = this.shellRestarts;
      const answer = await this.workspace.execute(command, this.timings.actionWaitMs);
      // Its shell ended under it: the fresh shell's prompt, or the container's failure, decides what
      // the observation says (a shell that died with its container is seen before the container is).
      if (this.shellRestarts !== restartsBefore) await this.workspace.ready(this.timings.workspace.shellStartTimeoutMs).catch(() => undefined);
      this.cursor = this.workspace.events.next;
      const running = answer.returncode === null && this.workspace.runningJobId === answer.job_id;
      const stdout = answer.stdout.endsWith(STILL_RUNNING) ? answer.stdout.slice(0, -STILL_RUNNING.length) : answer.stdout;
      return { stdout, stderr: '', terminal_still_running: running, exit_code: answer.returncode };
    } catch (err) {
      // Busy (a job still runs) or no shell ready: the agent reads it as the action's outcome.
      if (err instanceof BrokerError) {
        const busy = err.code === 'workspace_busy';
        const why = busy ? 'the terminal is still running an earlier command: send keys with POST /input, read it with GET /output, or wait for it' : err.detail;
        return { ...failed(why), terminal_still_running: busy };
      }
      throw err;
    }
  }

  private async tool(name: string, args: unknown): Promise<Observation> {
    const file = `${this.container.filesDir}/${TOOLS_SUBDIR}/${name}.py`;
    try {
      const run = await this.container.run(['python3', `${this.container.filesDir}/${TOOL_RUNNER_FILE}`, file, name], `${JSON.stringify(args ?? {})}\n`, this.timings.toolTimeoutMs);
      const timeout = run.timedOut ? `tool ${name} was still running after ${this.timings.toolTimeoutMs / 1000} s and was killed\n` : '';
      return { stdout: run.stdout, stderr: run.stderr + timeout, terminal_still_running: this.workspace.runningJobId !== null, exit_code: run.exitCode };
    } catch (err) {
      return failed(`tool ${name} could not run: ${errorMessage(err)}`);
    }
  }

  private failure(): string {
    return `the sandbox's container failed (${this.failedReason}): its terminal, its processes and their state are gone; stop the sandbox (POST /sandbox/stop) and start it again`;
  }

  /**
   * Its container failed under its terminal: said in the next observation (the action running now
   * ends with it), and the workspace closes, so that no fresh shell is tried in a dead container.
   */
  private fail(reason: string): void {
    if (this.failedReason !== null || this.closed) return;
    this.failedReason = reason;
    logger.warn({ sandbox: this.id, reason }, "a group sandbox's container failed: the sandbox serves no more actions");
    // In place of a fresh-shell notice: no fresh shell comes.
    this.notices = [`[${this.failure()}]\n`];
    void this.workspace.close();
  }

  private onEvent(event: WorkspaceEvent): void {
    if (event.type === 'shell_restarted') {
      this.shellRestarts++;
      this.notices.push(`[the terminal's shell ended (${String(event.reason)}); a fresh shell took its place: the terminal's state (cwd, variables, jobs) is lost]\n`);
    } else if (event.type === 'shell_restart_failed') {
      this.notices.push(`[the terminal's shell could not be restarted (${String(event.reason)}); retrying]\n`);
    }
  }

  private withNotices(observation: Observation): Observation {
    if (this.notices.length === 0) return observation;
    const said = this.notices.splice(0).join('');
    return { ...observation, stderr: observation.stderr + said };
  }

  private unread(): { events: WorkspaceEvent[]; dropped: number } {
    const ring = this.workspace.events;
    const from = this.cursor;
    this.cursor = ring.next;
    const { dropped, events } = ring.slice(from, ring.next - from);
    return { events, dropped: dropped ? dropped.to_seq - dropped.from_seq + 1 : 0 };
  }
}

function failed(stderr: string): Observation {
  return { stdout: '', stderr: `${stderr}\n`, terminal_still_running: false, exit_code: null };
}

/**
 * A sandbox's terminal stays in its dedicated container: a dying shell is replaced there, and a
 * failed container is the sandbox's failure (`onFailed`, and its /health says so), not a reason to move.
 */
function fixedPlace(container: StartedSandboxContainer, onFailed: (reason: string) => void): WorkspacePlace {
  return {
    container: container.ref,
    workdir: container.workdir,
    lostReason: () => null,
    // Never lost (nowhere to move): a shell that died alone is restarted in place; one that died
    // with its container fails the sandbox first, which closes the workspace (no restart).
    failure: async () => {
      const health = await container.check().catch((err: unknown) => ({ healthy: false, reason: errorMessage(err) }));
      if (!health.healthy) onFailed(health.reason ?? 'unhealthy');
      return null;
    },
    onLost: () => undefined,
    open: (env, size) => container.openTerminal(env, size),
    move: () => Promise.reject(new Error("a sandbox's dedicated container cannot be exchanged")),
    giveBack: () => undefined,
  };
}
