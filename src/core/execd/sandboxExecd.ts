/**
 * execd's state for one sandbox: its command runners and command records, its bash sessions and its
 * code contexts, all in companion shells (companionShells.ts) that die with the sandbox.
 */
import type { BashSessionTimings } from '../session/bashSession';
import type { SessionBackend } from '../ports/backend';
import type { SandboxHandle } from '../sandbox/sandboxHandle';
import { BadRequestError, BrokerError, SessionBusyError } from '../../common/errors';
import { newSessionId } from '../../common/ids';
import type { CompanionUnits } from './companionShells';
import { ShellBudget } from './shellBudget';
import { CommandRecord, runCommand, type CommandRequest, type CommandStatus } from './commands';
import { CommandLog } from './commandLog';
import { PersistentBash } from './persistentBash';
import { CodeContexts, type CodeLanguage } from './codeContexts';
import { ExecdEvents, limitOutput, type EventSink } from './execdEvents';

export interface ExecdLimits {
  /** Companion shells a sandbox may have open at once (running commands, sessions, contexts). */
  maxShellsPerSandbox: number;
  /** Output a stream carries, and a background command's log keeps, at most (bytes). */
  maxOutputBytes: number;
  /** Finished commands a sandbox remembers for /command/status and logs (the oldest are forgotten). */
  maxFinishedCommands: number;
  timings: BashSessionTimings;
}

export class NotFoundError extends BrokerError {
  constructor(what: string, id: string) {
    super('not_found', `${what}_not_found`, `${what[0].toUpperCase()}${what.slice(1)} not found: ${id}`);
  }
}

/** A run checked and ready; `start` streams its events to `sink` and resolves when the stream may end. */
export interface PreparedRun {
  start(sink: EventSink): Promise<void>;
}

export class SandboxExecd {
  private readonly shells: ShellBudget;
  private readonly commands = new Map<string, CommandRecord>();
  private readonly sessions = new Map<string, PersistentBash>();
  readonly contexts: CodeContexts;

  constructor(
    private readonly handle: SandboxHandle,
    backend: SessionBackend,
    units: CompanionUnits,
    private readonly limits: ExecdLimits,
  ) {
    this.shells = new ShellBudget(backend, units, handle, limits.maxShellsPerSandbox, limits.timings);
    this.contexts = new CodeContexts(this.shells, limits.timings, handle.root);
  }

  get root(): string {
    return this.handle.root;
  }

  /** What it holds now, in a line (the dashboard's sandbox list). */
  summary(): string {
    let running = 0;
    for (const c of this.commands.values()) if (c.running) running++;
    return `${running} command(s) running, ${this.sessions.size} bash session(s)`;
  }

  get openShells(): number {
    return this.shells.openCount;
  }

  warm(): void {
    this.shells.warm();
  }

  /** A command with a runner taken (so a failure to get one is the request's error, before the stream). */
  async command(req: CommandRequest): Promise<PreparedRun> {
    const runner = await this.shells.takeRunner();
    const record = new CommandRecord(newSessionId(), req.command, req.background ? new CommandLog(this.limits.maxOutputBytes) : null);
    this.remember(record);
    return {
      start: async (sink) => {
        if (!req.background) {
          await runCommand(runner, record, req, limitOutput(sink, this.limits.maxOutputBytes));
          return this.shells.giveBack(runner);
        }
        // Detached: the stream says it started and ends; its output goes to its log only.
        void runCommand(runner, record, req, () => undefined).finally(() => this.shells.giveBack(runner));
        sink(ExecdEvents.init(record.id));
        sink(ExecdEvents.complete(0));
      },
    };
  }

  status(id: string): CommandStatus {
    return this.record(id).status();
  }

  logs(id: string, cursor: number | null): { text: string; nextCursor: number } {
    const record = this.record(id);
    if (!record.log) throw new BadRequestError(`command ${id} ran in the foreground: its output was streamed, and only a background command keeps logs`);
    return record.log.read(cursor);
  }

  /** Stops what runs under `id`: a command, a bash session's command or a context's code. */
  interrupt(id: string): void {
    const record = this.commands.get(id);
    if (record) return void record.interrupt();
    const session = this.sessions.get(id);
    if (session) return void session.interrupt();
    if (!this.contexts.interrupt(id)) throw new NotFoundError('execution', id);
  }

  async createSession(cwd: string): Promise<string> {
    const companion = await this.shells.openShell();
    const session = await PersistentBash.open(companion, this.limits.timings, cwd, 'bare');
    const id = newSessionId();
    this.sessions.set(id, session);
    return id;
  }

  /** A run in session `id`, checked (404 unknown, 409 busy) before its stream opens. */
  sessionRun(id: string, command: string, options: { cwd?: string; timeoutMs: number | null }): PreparedRun {
    const session = this.sessions.get(id);
    if (!session) throw new NotFoundError('session', id);
    if (session.busy) throw new SessionBusyError(id);
    return { start: (sink) => session.run(id, command, options, limitOutput(sink, this.limits.maxOutputBytes)) };
  }

  async deleteSession(id: string): Promise<void> {
    const session = this.sessions.get(id);
    if (!session) throw new NotFoundError('session', id);
    this.sessions.delete(id);
    await session.close();
  }

  /** A code run: in a context (by id, or the language's default), or as a command when neither is named. */
  async code(code: string, contextId: string | null, language: CodeLanguage | null): Promise<PreparedRun> {
    if (contextId === null && language === null) {
      return this.command({ command: code, cwd: this.handle.root, envs: {}, timeoutMs: null, background: false });
    }
    const ctx = await this.contexts.target(contextId, language);
    return { start: (sink) => this.contexts.run(ctx, code, limitOutput(sink, this.limits.maxOutputBytes)) };
  }

  close(): Promise<void> {
    this.sessions.clear();
    return this.shells.close();
  }

  private record(id: string): CommandRecord {
    const record = this.commands.get(id);
    if (!record) throw new NotFoundError('command', id);
    return record;
  }

  /** Keeps the record; forgets the oldest finished ones beyond the limit (running ones stay). */
  private remember(record: CommandRecord): void {
    this.commands.set(record.id, record);
    let finished = 0;
    for (const r of this.commands.values()) if (!r.running) finished++;
    for (const [id, r] of this.commands) {
      if (finished <= this.limits.maxFinishedCommands) break;
      if (r.running || r === record) continue;
      this.commands.delete(id);
      finished--;
    }
  }
}
