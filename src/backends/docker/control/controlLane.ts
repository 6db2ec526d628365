/**
 * One of a container's control lanes: a bash the broker keeps for itself (over the container's
 * channel: a plain `docker exec`, or pipes its entrypoint spawned it on),
 * framed like a session (BashSession), running its requests one at a time. controlShell.ts keeps
 * two per container so that a request that can hang (a fork at the pids limit) never delays one
 * that frees the container (a kill).
 *
 * Nothing wedges a lane for ever: each request has a deadline counted from when it was asked for.
 * One that expires while queued fails alone; one that expires while running fails, and the lane's
 * bash is discarded (its stream closed, `onDiscard` told its pid so it can be killed) and a new
 * one is opened, lazily, for the next request. Callers get a BackendError either way.
 */
import { BashSession, ShellDiedError } from '../../../core/session/bashSession';
import type { ShellListener, ShellProcess } from '../../../core/ports/backend';
import { BackendError, errorMessage } from '../../../common/errors';
import type { ChannelOpener, ShellChannel } from '../shells/channel';

/**
 * A request's deadline passed. `running`: its command had started, so it may still take effect
 * later (the lane's bash is discarded, but its kill goes through a lane too); a queued one never runs.
 */
export class LaneDeadlineError extends BackendError {
  constructor(
    message: string,
    readonly running: boolean,
  ) {
    super(message);
  }
}

/** After a failed open, requests fail at once for this long instead of each trying a new exec. */
const REOPEN_HOLDOFF_MS = 1_000;
const MAX_OUTPUT_BYTES = 64 * 1024;

/** The lane's own transport: a bare channel; it never needs signals or recycling. */
class LaneTransport implements ShellProcess {
  private listener: ShellListener | null = null;
  private channel: ShellChannel | null = null;
  constructor(readonly description: string) {}
  static async open(openChannel: ChannelOpener, description: string): Promise<LaneTransport> {
    const lane = new LaneTransport(description);
    lane.channel = await openChannel({
      env: [],
      sink: {
        onData: (s, c) => lane.listener?.onData(s, c),
        onEnd: (reason) => lane.listener?.onExit({ code: null, signal: null, reason: `${description}: ${reason}` }),
      },
    });
    return lane;
  }
  setListener(l: ShellListener): void {
    this.listener = l;
  }
  write(text: string): void {
    this.channel?.write(text);
  }
  interrupt(): void {}
  async killStartedSince(): Promise<number> {
    return 0;
  }
  async close(): Promise<void> {
    this.channel?.destroy();
  }
}

interface LaneShell {
  session: BashSession;
  /** The lane bash's pid inside the container. */
  pid: number;
}

interface Request {
  command: string;
  deadline: number;
  timer: NodeJS.Timeout;
  graceTimer?: NodeJS.Timeout;
  urgent: boolean;
  /** Asked when the request's turn comes: false settles it with '' without running it. */
  stillWanted?: () => boolean;
  running: boolean;
  done: boolean;
  resolve: (stdout: string) => void;
  reject: (err: Error) => void;
}

export interface LaneOptions {
  openChannel: ChannelOpener;
  /** For messages: `signal lane of 0123456789ab`. */
  name: string;
  /** Sent once to every new bash of the lane (function definitions). */
  initScript: string;
  /** A running request overran its deadline: its bash (pid) was dropped and should be killed. */
  onDiscard?: (pid: number) => void;
  /**
   * How long a request that overran its deadline (its caller already failed) may go on running
   * before the lane's bash is discarded. 0 (the default): at once. A lane of builtins only is slow
   * when its container's CPU is starved, not stuck: letting it finish beats a new exec that, at the
   * pids limit, cannot even start.
   */
  discardGraceMs?: number;
  /** What of a command its error messages may show (the fs lane's hide the session ids in paths). */
  redact?: (command: string) => string;
}

export class ControlLane {
  private shell: LaneShell | null = null;
  /** The request the lane's bash is running now. */
  private current: Request | null = null;
  private readonly queue: Request[] = [];
  private busy = false;
  private closed = false;
  private openFailure: { at: number; message: string } | null = null;

  constructor(private readonly options: LaneOptions) {}

  /** Opens the lane's bash now rather than on its first request. */
  async warm(timeoutMs: number): Promise<void> {
    await this.run(':', timeoutMs);
  }

  /** Nothing running and nothing queued: a request now starts at once. */
  get idle(): boolean {
    return !this.busy && this.queue.length === 0;
  }

  /** Not closed, and its last attempt to open a bash (if any) did not fail. */
  get usable(): boolean {
    return !this.closed && this.openFailure === null;
  }

  /**
   * Runs `command` (stdout returned) within `timeoutMs` of now, queue wait included. `urgent`
   * requests go before every queued non-urgent one (a ^C must not wait behind cleanups' kills).
   * `stillWanted`, asked when the request's turn comes, can drop it (a ^C whose command ended).
   */
  run(command: string, timeoutMs: number, urgent = false, stillWanted?: () => boolean): Promise<string> {
    if (this.closed) return Promise.reject(new BackendError(`${this.options.name} is closed`));
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => this.expire(req, timeoutMs), timeoutMs);
      const req: Request = { command, deadline: Date.now() + timeoutMs, timer, urgent, stillWanted, running: false, done: false, resolve, reject };
      const firstNormal = urgent ? this.queue.findIndex((r) => !r.urgent) : -1;
      this.queue.splice(firstNormal < 0 ? this.queue.length : firstNormal, 0, req);
      void this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const req of this.queue.splice(0)) this.settle(req, new BackendError(`${this.options.name} closed`));
    const shell = this.shell;
    this.shell = null;
    await shell?.session.close().catch((err) => {
      if (!(err instanceof ShellDiedError)) throw err;
    });
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (let req = this.queue.shift(); req; req = this.queue.shift()) {
        if (req.done) continue;
        if (req.stillWanted && !req.stillWanted()) {
          this.settle(req, '');
          continue;
        }
        req.running = true;
        this.current = req;
        await this.execute(req);
        this.current = null;
        clearTimeout(req.graceTimer);
      }
    } finally {
      this.busy = false;
    }
  }

  private async execute(req: Request): Promise<void> {
    let shell: LaneShell;
    try {
      shell = await this.ensureShell(req);
    } catch (err) {
      return this.settle(req, err instanceof BackendError ? err : new BackendError(errorMessage(err)));
    }
    if (req.done) return;
    try {
      // The deadline is ours (expire()); BashSession's own timeout is only a backstop far beyond it.
      const remaining = Math.max(1, req.deadline - Date.now());
      const r = await shell.session.execute(req.command, { timeoutMs: remaining + 60_000, maxOutputBytes: MAX_OUTPUT_BYTES });
      if (r.timedOut) this.settle(req, new BackendError(`${this.options.name}: command timed out: ${this.brief(req.command)}`));
      else this.settle(req, r.stdout);
    } catch (err) {
      // The bash died under the request (container gone, or expire() discarded it).
      if (this.shell === shell) this.shell = null;
      this.settle(req, new BackendError(`${this.options.name} died: ${errorMessage(err)} (running: ${this.brief(req.command)})`));
    }
  }

  /** The lane's bash, opened if there is none; the open counts against the request's deadline. */
  private async ensureShell(req: Request): Promise<LaneShell> {
    if (this.shell?.session.alive) return this.shell;
    this.shell = null;
    if (this.openFailure && Date.now() - this.openFailure.at < REOPEN_HOLDOFF_MS) {
      throw new BackendError(`${this.options.name} could not be opened: ${this.openFailure.message}`);
    }
    const opening = this.open();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), Math.max(1, req.deadline - Date.now()));
    });
    try {
      const shell = await Promise.race([opening, bound]);
      this.openFailure = null;
      if (this.closed) {
        void shell.session.close().catch(() => undefined);
        throw new BackendError(`${this.options.name} closed`);
      }
      // Kept even if the request expired during the open: the next request uses it.
      this.shell = shell;
      return shell;
    } catch (err) {
      // An open that finishes after its bound is not wanted: close it when it comes.
      void opening.then((s) => (this.shell === s ? undefined : s.session.close().catch(() => undefined))).catch(() => undefined);
      const message = errorMessage(err);
      this.openFailure = { at: Date.now(), message };
      throw new BackendError(`${this.options.name} could not be opened: ${message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private async open(): Promise<LaneShell> {
    const session = new BashSession(await LaneTransport.open(this.options.openChannel, this.options.name));
    try {
      await session.start();
      const r = await session.execute(`${this.options.initScript}\nbuiltin echo $$`, { timeoutMs: 20_000, maxOutputBytes: MAX_OUTPUT_BYTES });
      const pid = Number(r.stdout.trim());
      if (r.timedOut || !(pid > 1)) throw new Error(`its bash did not answer (${JSON.stringify(r.stdout.slice(0, 80))})`);
      return { session, pid };
    } catch (err) {
      await session.close().catch(() => undefined);
      throw err;
    }
  }

  /** The request's deadline passed: it fails; if it was running, the lane's bash goes with it. */
  private expire(req: Request, timeoutMs: number): void {
    if (req.done) return;
    const where = req.running ? 'running' : 'queued';
    this.settle(req, new LaneDeadlineError(`${this.options.name}: no answer within ${timeoutMs} ms (${where}): ${this.brief(req.command)}`, req.running));
    if (!req.running) {
      const i = this.queue.indexOf(req);
      if (i >= 0) this.queue.splice(i, 1);
      return;
    }
    const grace = this.options.discardGraceMs ?? 0;
    if (grace > 0) {
      req.graceTimer = setTimeout(() => this.current === req && this.discard(), grace);
      req.graceTimer.unref();
    } else {
      this.discard();
    }
  }

  /** Drops the lane's bash (the running request's execute then rejects and the queue moves on). */
  private discard(): void {
    const shell = this.shell;
    if (!shell) return; // still opening: ensureShell keeps what it opens for the next request
    this.shell = null;
    // Rejects the execute above at once (ShellDiedError), which lets the queue move on.
    void shell.session.close().catch(() => undefined);
    this.options.onDiscard?.(shell.pid);
  }

  private brief(command: string): string {
    return brief(this.options.redact ? this.options.redact(command) : command);
  }

  private settle(req: Request, outcome: string | Error): void {
    if (req.done) return;
    req.done = true;
    clearTimeout(req.timer);
    if (outcome instanceof Error) req.reject(outcome);
    else req.resolve(outcome);
  }
}

function brief(command: string): string {
  const line = command.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 60)}...` : line;
}
