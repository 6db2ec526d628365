/**
 * The companion shells of one sandbox (companionShells.ts), counted against a cap, and all of them
 * closed at once when the sandbox ends. Also the stock of idle command runners: a `/command` takes
 * one (or opens one), runs in a subshell of it, and gives it back, so a command costs a fork, not a
 * new shell. A runner's leftovers (a server a command started with `&`) live on in it until the
 * sandbox ends, as a pool lease's background jobs do.
 *
 * A sandbox that is a whole container of its own lends its lease shell (SandboxHandle.ownShell): it is
 * the first idle runner, so the first command runs at once, with no shell to open. It is borrowed, not
 * owned: never closed here (the lease's release kills what it started), and not counted against the
 * cap (it is no companion). A command's timeout there kills what it started since (the slot's unit
 * holds no other execd runner), as in any runner.
 */
import { BashSession, type BashSessionTimings } from '../session/bashSession';
import type { SessionBackend } from '../ports/backend';
import type { SandboxHandle } from '../sandbox/sandboxHandle';
import { brokerError, BackendError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';
import { openCompanion, type Companion, type CompanionUnits } from './companionShells';

export class ExecdLimitError extends brokerError('busy', 'execd_limit', (max: number) => `This sandbox already has ${max} execd shells (running commands, bash sessions, code contexts); delete a session or context, or wait for a command to end`) {}

export class ShellBudget {
  private readonly open = new Set<Companion>();
  private opening = 0;
  private readonly idle: BashSession[] = [];
  private readonly companionOf = new Map<BashSession, Companion>();
  private warming: Promise<void> | null = null;
  private closed = false;
  private readonly borrowed: BashSession | null;

  constructor(
    private readonly backend: SessionBackend,
    private readonly units: CompanionUnits,
    private readonly handle: SandboxHandle,
    private readonly maxShells: number,
    private readonly timings: BashSessionTimings,
  ) {
    this.borrowed = handle.ownShell?.alive ? handle.ownShell : null;
    if (this.borrowed) this.idle.push(this.borrowed);
  }

  /** Companion shells open or opening (a borrowed lease shell is none). */
  get openCount(): number {
    return this.open.size + this.opening;
  }

  /** A new companion shell of this sandbox, within the cap (ExecdLimitError beyond it). */
  async openShell(): Promise<Companion> {
    if (this.closed) throw new BackendError(`sandbox ${this.handle.id} has ended`);
    if (this.open.size + this.opening >= this.maxShells) throw new ExecdLimitError(this.maxShells);
    this.opening++;
    let companion: Companion;
    try {
      companion = await openCompanion(this.backend, this.units, this.handle);
    } finally {
      this.opening--;
    }
    const close = (): Promise<void> => {
      this.open.delete(tracked);
      return companion.close();
    };
    const tracked: Companion = { shell: companion.shell, close };
    this.open.add(tracked);
    // The sandbox ended while the shell was opening: nobody will close it otherwise.
    if (this.closed) {
      await close();
      throw new BackendError(`sandbox ${this.handle.id} has ended`);
    }
    return tracked;
  }

  /** An idle runner, the one being warmed, or a new one (started: the framing's init done). */
  async takeRunner(): Promise<BashSession> {
    const idle = this.takeIdle();
    if (idle) return idle;
    // A ping announced this command: the runner it opened is nearer than a new one.
    if (this.warming) await this.warming;
    return this.takeIdle() ?? this.openRunner();
  }

  private takeIdle(): BashSession | null {
    for (let r = this.idle.pop(); r; r = this.idle.pop()) if (r.alive) return r;
    return null;
  }

  private async openRunner(): Promise<BashSession> {
    const companion = await this.openShell();
    const runner = new BashSession(companion.shell, this.timings);
    try {
      await runner.start();
    } catch (err) {
      await companion.close();
      throw new BackendError(`could not start a shell in sandbox ${this.handle.id}: ${errorMessage(err)}`);
    }
    this.companionOf.set(runner, companion);
    runner.onDeath(() => this.discard(runner));
    return runner;
  }

  giveBack(runner: BashSession): void {
    if (this.closed || !runner.alive) this.discard(runner);
    else this.idle.push(runner);
  }

  /** Opens a runner ahead of the first command, when none is idle (a ping announces commands). */
  warm(): void {
    if (this.idle.length > 0 || this.warming || this.closed) return;
    this.warming = this.openRunner()
      .then((r) => this.giveBack(r))
      .catch((err: unknown) => logger.debug({ sandbox: this.handle.id, err: errorMessage(err) }, 'execd: could not warm a runner'))
      .finally(() => (this.warming = null));
  }

  /** Kills every companion shell of the sandbox and what it started. */
  async close(): Promise<void> {
    this.closed = true;
    this.idle.length = 0;
    await Promise.all([...this.open].map((c) => c.close()));
  }

  private discard(runner: BashSession): void {
    const i = this.idle.indexOf(runner);
    if (i >= 0) this.idle.splice(i, 1);
    if (runner === this.borrowed) return; // its owner's to close
    const companion = this.companionOf.get(runner);
    this.companionOf.delete(runner);
    void runner.close().catch(() => undefined);
    void companion?.close();
  }
}
