/**
 * The task sandboxes of this broker: creates each with readiness gating (the container
 * started, the daemon's /health answering, the credentials sent, /init sent), forwards prompts and
 * aborts, and ends them. No HTTP here: the router (api/tasks/taskRoutes.ts) validates and calls in.
 */
import { randomBytes } from 'node:crypto';
import { BackendError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';
import { nodeScopedId } from '../../common/ids';
import { TaskSandbox } from './taskSandbox';
import { DaemonCallError, type DaemonHealth, type DaemonLink } from '../ports/taskPorts';
import type { ContainerStarts } from '../ports/containers';
import type { SessionBackend } from '../ports/backend';
import type { SandboxDirectory } from '../sandbox/sandboxDirectory';
import { containerSandbox } from '../sandbox/sandbox';
import { DaemonNotReadyError, DaemonRefusedError, TaskCapacityError, TaskEndedError, TaskNotFoundError, TasksUnavailableError } from './taskErrors';

export const DEFAULT_TASK_PROMPT = 'Tell me what this repo is about';

export interface CreateTaskInput {
  name?: string;
  repo: string;
  prompt?: string;
}

/** The tasks' part of the configuration (config/taskConfig.ts documents each). */
interface Settings {
  readyTimeoutMs: number;
  journalEvents: number;
  maxSandboxes: number;
  model: string;
  /** Where repositories are cloned from; the backend reads it, this only asks whether there is one. */
  gitBase: object | null;
}

const HEALTH_POLL_MS = 100;

export class TaskService {
  private readonly sandboxes = new Map<string, TaskSandbox>();
  /** Each task sandbox's end: it leaves the broker's directory of sandboxes on it. */
  private readonly ends = new Map<string, AbortController>();
  private starting = 0;
  private swept: Promise<unknown> | null = null;
  private closed = false;

  /**
   * `backend`: the one that starts the sandboxes' containers (and serves execd's shells in them);
   * null: this broker cannot run task sandboxes, and `unavailableWhy` says why (501).
   * `directory`: the broker's directory of live sandboxes, where each task sandbox is one until it is removed.
   */
  constructor(
    private readonly backend: SessionBackend | null,
    private readonly settings: Settings,
    private readonly unavailableWhy = 'task sandboxes need the Docker backend (BROKER_BACKEND=docker)',
    private readonly directory?: SandboxDirectory,
  ) {}

  async create(input: CreateTaskInput): Promise<TaskSandbox> {
    const backend = this.requireBackend();
    if (!this.settings.gitBase) throw new TasksUnavailableError('BROKER_GIT_BASE_URL is not set: there is nowhere to clone repositories from');
    if (this.closed) throw new BackendError('the broker is shutting down');
    if (this.sandboxes.size + this.starting >= this.settings.maxSandboxes) throw new TaskCapacityError(this.settings.maxSandboxes);
    this.starting++;
    try {
      await this.sweepStale();
      return await this.launch(backend, input);
    } finally {
      this.starting--;
    }
  }

  /**
   * Removes the task containers an earlier broker of this deployment left (sandboxes live in the
   * broker's memory: a restarted broker cannot serve them). Once; the first create waits for it.
   */
  sweepStale(): Promise<unknown> {
    if (!this.backend) return Promise.resolve();
    this.swept ??= this.backend.containers.sweep({ kind: 'task' }).then(
      (removed) => removed > 0 && logger.info({ removed }, 'removed task containers an earlier broker left'),
      (err) => logger.warn({ err: errorMessage(err) }, 'sweeping old task containers failed'),
    );
    return this.swept;
  }

  get(id: string): TaskSandbox {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) {
      this.requireBackend();
      throw new TaskNotFoundError(id);
    }
    return sandbox;
  }

  /** A sandbox that still takes requests (410 once terminated). */
  live(id: string): TaskSandbox {
    const sandbox = this.get(id);
    if (sandbox.status === 'terminated') throw new TaskEndedError(id);
    return sandbox;
  }

  async prompt(id: string, message: string): Promise<unknown> {
    return forward(this.live(id).container.link, '/prompt', { message });
  }

  async abort(id: string): Promise<unknown> {
    return forward(this.live(id).container.link, '/abort', {});
  }

  /** Ends the sandbox (its streams end with sandbox_terminated). Forgotten after, so its id is 404. */
  async remove(id: string): Promise<TaskSandbox> {
    const sandbox = this.get(id);
    // Its end first: what execd started in it closes while its container is still there.
    this.ends.get(id)?.abort();
    await sandbox.terminate('deleted');
    this.forget(id);
    return sandbox;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const end of this.ends.values()) end.abort();
    await Promise.all([...this.sandboxes.values()].map((s) => s.terminate('broker shutting down').catch(() => undefined)));
    for (const id of [...this.sandboxes.keys()]) this.forget(id);
  }

  private remember(sandbox: TaskSandbox): void {
    this.sandboxes.set(sandbox.id, sandbox);
    const end = new AbortController();
    this.ends.set(sandbox.id, end);
    const describe = (): string => {
      const r = sandbox.record();
      return `${r.status}, ${r.repo}${r.name ? ` (${r.name})` : ''}`;
    };
    this.directory?.register(containerSandbox(sandbox.id, 'task', end.signal, sandbox.container.shells, this.backend, describe));
  }

  private forget(id: string): void {
    this.sandboxes.delete(id);
    this.ends.get(id)?.abort();
    this.ends.delete(id);
  }

  private requireBackend(): ContainerStarts {
    if (!this.backend) throw new TasksUnavailableError(this.unavailableWhy);
    return this.backend.containers;
  }

  private async launch(backend: ContainerStarts, input: CreateTaskInput): Promise<TaskSandbox> {
    const id = nodeScopedId(`task-${randomBytes(6).toString('hex')}`);
    const t0 = performance.now();
    const container = await backend.start({ kind: 'task', task: { id } });
    const link = container.link;
    // The daemon gets the relay's capability, never a key (the relay attaches those).
    const sendCredentials = (): Promise<unknown> => link.post('/credentials', { capability: container.capability });
    const sandbox = new TaskSandbox(id, input.name ?? id, input.repo, container, this.settings.journalEvents, () => sendCredentials().then(() => undefined));
    sandbox.timings.containerStartMs = container.startMs;
    try {
      const health = await this.waitHealthy(id, link);
      sandbox.timings.daemonReadyMs = performance.now() - t0 - container.startMs;
      await sendCredentials();
      this.remember(sandbox);
      sandbox.markReady(health);
      await link.post('/init', { repo: input.repo, prompt: input.prompt ?? DEFAULT_TASK_PROMPT, model: this.settings.model, clone: container.cloneSource(input.repo) });
    } catch (err) {
      this.forget(id);
      // Its container goes with it: a sandbox that failed to start leaves nothing behind.
      await sandbox.terminate('failed to start').catch(() => undefined);
      if (err instanceof DaemonCallError) throw new DaemonRefusedError(err.status, err.detail);
      throw err;
    }
    return sandbox;
  }

  private async waitHealthy(id: string, link: DaemonLink): Promise<DaemonHealth> {
    const deadline = AbortSignal.timeout(this.settings.readyTimeoutMs);
    let lastError = 'no answer yet';
    while (!deadline.aborted) {
      try {
        return await link.health(AbortSignal.any([deadline, AbortSignal.timeout(5000)]));
      } catch (err) {
        lastError = errorMessage(err);
      }
      await new Promise((r) => setTimeout(r, HEALTH_POLL_MS));
    }
    throw new DaemonNotReadyError(id, this.settings.readyTimeoutMs, lastError);
  }
}

async function forward(link: DaemonLink, path: string, body: unknown): Promise<unknown> {
  try {
    return await link.post(path, body);
  } catch (err) {
    if (err instanceof DaemonCallError) throw new DaemonRefusedError(err.status, err.detail);
    throw new BackendError(`the sandbox's daemon did not answer ${path}: ${errorMessage(err)}`);
  }
}
