/**
 * What the daemon does, without its HTTP: takes its relay capability, sets the workspace up once (clone, then
 * the agent), holds prompts that come before the workspace is ready and fires them after it, in
 * order, and reports every step on its event log.
 *
 * Lifecycle events it emits: repo_cloned / repo_clone_error, init_complete, prompt_queued and
 * daemon_error; the agent's own (turn_*, message_*, tool_execution_*) come from PiAgent.
 */
import path from 'node:path';
import { EventLog } from './eventLog';
import { gitClone } from './clone';
import { PiAgent } from './piAgent';

export interface DaemonOptions {
  /** Where repositories are cloned (/root/workspace). */
  workspaceRoot: string;
  /** ~/.wuhu */
  wuhuDir: string;
  /** Base URL per provider, and the origin a relayed clone URL is resolved against (null: no relay). */
  endpoints: Record<string, string>;
  relayOrigin: string | null;
  cloneTimeoutMs: number;
  journalEvents: number;
}

export interface InitRequest {
  repo: string;
  prompt: string;
  model: string;
  /** A path inside the sandbox (a mounted directory of bare repos) or a path on the relay. */
  clone: { path: string } | { relay: string };
}

export type DaemonState = 'waiting' | 'cloning' | 'ready' | 'failed';

/** A request the daemon's state refuses (answered 409). */
export class StateError extends Error {}

export class TaskDaemon {
  readonly log: EventLog;
  readonly agent: PiAgent;
  private stateNow: DaemonState = 'waiting';
  private readonly pending: string[] = [];
  private readyPromise: Promise<void> = Promise.resolve();

  constructor(private readonly options: DaemonOptions) {
    this.log = new EventLog(options.journalEvents);
    this.agent = new PiAgent(this.log, options.wuhuDir);
  }

  get state(): DaemonState {
    return this.stateNow;
  }

  /** Reopens the conversation a previous daemon in this sandbox left, if any. */
  async resume(): Promise<boolean> {
    const saved = this.agent.savedSetup();
    if (!saved) return false;
    this.stateNow = 'cloning';
    try {
      await this.agent.start({ cwd: saved.cwd, model: saved.model, endpoints: this.options.endpoints }, saved);
      this.stateNow = 'ready';
      this.log.emit('init_complete', { cwd: saved.cwd, resumed: true, messages: this.agent.messageCount });
      return true;
    } catch (err) {
      this.fail(`could not resume the saved session: ${message(err)}`);
      return false;
    }
  }

  setCapability(capability: string): Promise<void> {
    return this.agent.setCapability(capability);
  }

  /** Starts the setup and returns at once: its progress is on the event log. */
  init(request: InitRequest): void {
    if (this.stateNow !== 'waiting') throw new StateError(`the workspace is already ${this.stateNow === 'failed' ? 'failed' : 'set up'}; POST /init is taken once`);
    this.stateNow = 'cloning';
    this.pending.unshift(request.prompt);
    this.readyPromise = this.setUp(request);
  }

  /** Waits for the set-up started by init (tests). */
  settled(): Promise<void> {
    return this.readyPromise;
  }

  /** Fires the prompt now (queued as a follow-up while a turn runs), or holds it until the workspace is ready. */
  prompt(text: string): { queued: boolean; held: boolean } {
    if (this.stateNow === 'failed') throw new StateError('the workspace failed to set up; this sandbox takes no prompts');
    if (this.stateNow !== 'ready') {
      this.pending.push(text);
      return { queued: true, held: true };
    }
    return { queued: this.fire(text, false), held: false };
  }

  abort(): Promise<void> {
    this.pending.length = 0;
    return this.agent.abort();
  }

  private async setUp(request: InitRequest): Promise<void> {
    const name = request.repo.split('/')[1];
    const cwd = path.join(this.options.workspaceRoot, name);
    const url = 'path' in request.clone ? request.clone.path : `${this.options.relayOrigin ?? ''}${request.clone.relay}`;
    if ('relay' in request.clone && !this.options.relayOrigin) return this.fail('a relayed clone was asked for, and this daemon has no relay');
    const failure = await gitClone(url, cwd, this.options.cloneTimeoutMs);
    if (failure !== null) {
      this.stateNow = 'failed';
      this.pending.length = 0;
      this.log.emit('repo_clone_error', { repo: request.repo, message: failure });
      return;
    }
    this.log.emit('repo_cloned', { repo: request.repo, path: cwd });
    try {
      await this.agent.start({ cwd, model: request.model, endpoints: this.options.endpoints }, null);
    } catch (err) {
      return this.fail(`the agent could not start: ${message(err)}`);
    }
    this.stateNow = 'ready';
    this.log.emit('init_complete', { cwd, sessionFile: this.agent.sessionFile ?? null });
    const held = this.pending.splice(0);
    held.forEach((text, i) => this.fire(text, i === 0));
  }

  private fire(text: string, initial: boolean): boolean {
    const queued = this.agent.prompt(text);
    this.log.emit('prompt_queued', { message: text, initial, followUp: queued });
    return queued;
  }

  private fail(why: string): void {
    this.stateNow = 'failed';
    this.pending.length = 0;
    this.log.emit('daemon_error', { message: why });
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
