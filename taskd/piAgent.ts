/**
 * The Pi coding agent, driven through its SDK: one AgentSession per daemon, kept in a session file
 * under Pi's default data dir (~/.pi/agent/sessions), whose path is remembered in
 * ~/.wuhu/pi-session.json so a restarted daemon opens the same conversation again.
 *
 * The relay's capability goes into an in-memory AuthStorage as each relayed provider's runtime key
 * (never auth.json): Pi sends it where a key goes, and the relay swaps it for the key. The bash tool is
 * Pi's own, with a spawn hook that hands each command a scrubbed environment.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AgentSession, AgentSessionEvent, AuthStorage, ToolDefinition } from '@mariozechner/pi-coding-agent';
import type { EventLog } from './eventLog';
import { loadPi } from './esm';
import { RELAYED_PROVIDERS, scrubEnv } from './secrets';
import { CODING_EVENT_TYPES } from '../src/core/tasks/taskWire';

export interface AgentSetup {
  /** The repository's working tree: the agent's cwd. */
  cwd: string;
  /** `provider/model-id`, a model Pi knows (`anthropic/claude-sonnet-4-5`). */
  model: string;
  /** Base URL per provider (`anthropic` -> http://127.0.0.1:PORT/anthropic); a provider not named keeps Pi's. */
  endpoints: Record<string, string>;
}

interface SessionPointer {
  sessionFile: string;
  cwd: string;
  model: string;
}

export class PiAgent {
  private session: AgentSession | null = null;
  /** The prompt() run in progress (it settles when Pi has answered it and its follow-ups). */
  private running: Promise<void> | null = null;
  private aborting = false;
  private readonly auth: Promise<AuthStorage>;

  constructor(
    private readonly log: EventLog,
    /** ~/.wuhu: where the session pointer lives. */
    private readonly wuhuDir: string,
  ) {
    this.auth = loadPi().then(({ agent }) => agent.AuthStorage.inMemory());
  }

  get pointerPath(): string {
    return path.join(this.wuhuDir, 'pi-session.json');
  }

  get isStreaming(): boolean {
    return this.session?.isStreaming ?? false;
  }

  get started(): boolean {
    return this.session !== null;
  }

  get sessionFile(): string | undefined {
    return this.session?.sessionFile;
  }

  get messageCount(): number {
    return this.session?.messages.length ?? 0;
  }

  async setCapability(capability: string): Promise<void> {
    const auth = await this.auth;
    for (const provider of RELAYED_PROVIDERS) auth.setRuntimeApiKey(provider, capability);
  }

  /** The pointer a previous daemon left, when its session file and working tree are still there. */
  savedSetup(): SessionPointer | null {
    try {
      const saved = JSON.parse(fs.readFileSync(this.pointerPath, 'utf8')) as SessionPointer;
      return fs.existsSync(saved.cwd) ? saved : null;
    } catch {
      return null;
    }
  }

  /** Creates the session (or reopens the saved one when `resume`), and starts forwarding its events. */
  async start(setup: AgentSetup, resume: SessionPointer | null): Promise<void> {
    const { agent, ai } = await loadPi();
    const [provider, ...rest] = setup.model.split('/');
    const id = rest.join('/');
    const known = ai.getModel(provider as never, id as never) as ReturnType<typeof ai.getModel> | undefined;
    if (!known) throw new Error(`model '${setup.model}' is not one Pi knows (provider/model-id)`);
    const model = { ...known, baseUrl: setup.endpoints[provider] ?? known.baseUrl };
    const authStorage = await this.auth;
    // A session file exists once the first answer is written; until then there is nothing to reopen.
    const reopen = resume && fs.existsSync(resume.sessionFile) ? resume.sessionFile : null;
    const sessionManager = reopen ? agent.SessionManager.open(reopen) : agent.SessionManager.create(setup.cwd);
    const { session } = await agent.createAgentSession({
      cwd: setup.cwd,
      model,
      thinkingLevel: 'off',
      authStorage,
      modelRegistry: agent.ModelRegistry.inMemory(authStorage),
      sessionManager,
      // Replaces Pi's built-in bash (a custom tool of the same name wins); the cast: Pi types its
      // tool list with `unknown` arguments, its own bash definition with typed ones.
      customTools: [agent.createBashToolDefinition(setup.cwd, { spawnHook: (ctx) => ({ ...ctx, env: scrubEnv(ctx.env) }) }) as unknown as ToolDefinition],
    });
    this.session = session;
    session.subscribe((event) => this.forward(event));
    const file = session.sessionFile;
    if (file) {
      fs.mkdirSync(this.wuhuDir, { recursive: true });
      const pointer: SessionPointer = { sessionFile: file, cwd: setup.cwd, model: setup.model };
      fs.writeFileSync(this.pointerPath, JSON.stringify(pointer) + '\n');
    }
  }

  /**
   * Hands a prompt to Pi: run now when idle, else queued as a follow-up (Pi delivers it when the
   * agent would stop). Returns whether it was queued behind a running prompt.
   *
   * "Running" is ours, not `session.isStreaming`: Pi sets that only after a few awaits of
   * preflight, so two prompts in one tick would both look idle and the second would be refused.
   */
  prompt(message: string): boolean {
    const session = this.requireSession();
    if (this.running) {
      session.followUp(message).catch((err: unknown) => this.reportFailure(err));
      return true;
    }
    this.running = session
      .prompt(message, { streamingBehavior: 'followUp' })
      .catch((err: unknown) => this.reportFailure(err))
      .finally(() => {
        this.running = null;
        // A follow-up queued after Pi's last look at its queue, before prompt() settled: run it.
        const { followUp } = session.clearQueue();
        if (followUp.length > 0 && !this.aborting) this.prompt(followUp.join('\n\n'));
      });
    return false;
  }

  private reportFailure(err: unknown): void {
    this.log.emit('daemon_error', { message: `the agent failed: ${err instanceof Error ? err.message : String(err)}` });
  }

  /** Ends the running turn (Pi emits its turn_end with stopReason "aborted"); a no-op when idle. */
  async abort(): Promise<void> {
    if (!this.session) return;
    // An abort ends the run and drops what was queued behind it (Pi's own abort keeps the queue).
    this.aborting = true;
    try {
      this.session.clearQueue();
      await this.session.abort();
      await this.running;
    } finally {
      this.aborting = false;
    }
  }

  dispose(): void {
    this.session?.dispose();
  }

  private requireSession(): AgentSession {
    if (!this.session) throw new Error('the agent has not started');
    return this.session;
  }

  private forward(event: AgentSessionEvent): void {
    if (!CODING_EVENT_TYPES.has(event.type)) return;
    this.log.emit(event.type, slim(event));
  }
}

/**
 * A message_update carries the whole message so far twice (`message` and the delta's `partial`):
 * a long answer would make the journal quadratic. The delta alone is forwarded; message_end carries
 * the complete message.
 */
function slim(event: AgentSessionEvent): Record<string, unknown> {
  if (event.type !== 'message_update') return { ...event };
  const delta: Record<string, unknown> = { ...event.assistantMessageEvent };
  delete delta.partial;
  return { assistantMessageEvent: delta, role: event.message.role };
}
