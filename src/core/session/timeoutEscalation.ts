/**
 * What happens to a command whose time is up, as a terminal would do it: ^C first (the shell and its
 * state survive), then rounds of ^C and of SIGKILL of what the command started, in turn, until the
 * shell answers or is given up. BashSession starts one per timed-out command and learns the outcome through hooks.
 */
import type { ShellProcess } from '../ports/backend';
import { endMarkerRequest } from './framing';
import { delay } from '../../common/delay';

export interface EscalationTimings {
  /**
   * After ^C, how long to wait before SIGKILLing what the command started: long enough for a
   * program that handles SIGINT to exit by itself (300 ms by default), short for one that ignores it.
   */
  interruptGraceMs: number;
  /** After that SIGKILL, how long before the shell is declared unrecoverable. */
  killGraceMs: number;
}

/** How many kill graces a timed-out command's shell may take to come back, at most (however starved). */
const MAX_KILL_WAIT_ROUNDS = 3;

/**
 * Kills that must have been carried out, besides a kill grace since the first, before a shell is
 * declared dead sooner than that bound. A responsive container carries out a round every ~0.35 s, a
 * kill every other round (10 in ~7 s, inside the grace): a shell that ignores ^C is declared dead
 * after the grace. A starved one takes seconds per round (the soak: 5-10 rounds in 10-14 s before
 * three shells were given up for dead): there the shell is not to blame, and gets up to the bound.
 */
const MIN_LANDED_KILLS = 10;

/**
 * The ^Cs and kills of earlier commands still under way in the backend. A backend that delivers them
 * late (a starved container's lane) would otherwise deliver them into the next command: a ^C while
 * bash reads its line discards the line (its start marker never comes, and the session was given up
 * for dead with bash idle at its prompt: soak, session 5); a kill of "everything started since" the
 * earlier command takes the next one's processes too.
 */
export class InFlightSignals {
  private readonly ops = new Set<Promise<void>>();

  get empty(): boolean {
    return this.ops.size === 0;
  }

  /** Remembers a ^C or kill under way until it settles. */
  track(op: void | Promise<unknown>): void {
    if (!op) return;
    const settled = op.then(
      () => undefined,
      () => undefined,
    );
    this.ops.add(settled);
    void settled.then(() => this.ops.delete(settled));
  }

  /** Waits, at most `maxMs`, for everything tracked to settle. */
  async settle(maxMs: number): Promise<void> {
    await Promise.race([Promise.all(this.ops), delay(maxMs)]);
    this.ops.clear();
  }
}

export interface EscalationHooks {
  /** The command is still the session's running one (else every step is dropped). */
  isCurrent(): boolean;
  /** The shell did not come back: `why` says what the escalation saw. */
  giveUp(why: string): void;
}

export class TimeoutEscalation {
  /** The shell is back: killing what the command left before answering. No more rounds. */
  private reaping = false;
  /** Rounds of ^C and kill after the timeout, and how many of their kills were carried out. */
  private rounds = 0;
  private landedKills = 0;
  /** When the first round ran, and when its first kill was carried out (epoch ms). */
  private firstRoundAtMs = 0;
  private firstKillLandedAtMs: number | null = null;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly shell: ShellProcess,
    private readonly timings: EscalationTimings,
    private readonly inFlight: InFlightSignals,
    /** The command's nonce: its end marker is asked for again after each ^C. */
    private readonly nonce: string,
    /** When the command started (epoch ms): what started since is what the kills take. */
    private readonly startedAtMs: number,
    private readonly hooks: EscalationHooks,
  ) {}

  /** The command's time is up: ^C, ask for its end marker, and escalate after the interrupt grace. */
  begin(): void {
    const sent = this.interruptSent();
    this.shell.write(endMarkerRequest(this.nonce));
    // The grace runs from when the ^C was sent: a round's ^C sent right behind a late one (a busy
    // container's lane) would reach a process with the first still pending, and count for nothing.
    void sent.then(() => {
      if (this.wantsInterrupt()) this.timers.push(setTimeout(() => this.escalate(), this.timings.interruptGraceMs));
    });
  }

  /**
   * ^C brought the shell back, but what the command started in the background (immune to SIGINT
   * without job control) may still run: kills it before the next command can start anything.
   * Resolves once the kill was carried out or its bound passed; false when called twice.
   */
  async reap(): Promise<boolean> {
    if (this.reaping) return false;
    this.reaping = true;
    this.stop();
    await this.killStarted();
    return true;
  }

  /** Cancels the pending rounds (the command answered or the session ended). */
  stop(): void {
    for (const t of this.timers) clearTimeout(t);
  }

  /**
   * Until the shell answers, rounds a grace period apart: a ^C on the odd ones, a SIGKILL of what the
   * command started on the even ones, and the end marker asked for again on each. Repeating matters:
   * a ^C that lands while a loop's child exits normally is taken by bash as handled by the child
   * (bash's "wait and cooperative exit"), and the loop goes on; a later one lands between children
   * and stops it.
   *
   * Why a ^C and a kill are never sent together: a child can take the first ^C without dying (one
   * forked but not yet exec'd still has bash's handler; a program that handles one ^C). The next ^C
   * then kills it, bash sees a death by SIGINT and abandons the rest of the line, as a terminal does.
   * A SIGKILL sent with that ^C often landed first (a child bash that waits on its own child acts on
   * a SIGINT only once it has seen that child die), and a death by SIGKILL is one bash takes for the
   * child's own business: it ran the rest of the line, and `echo X; sleep 9; echo never` answered the
   * timeout with `never` in its stdout. So a kill round comes a grace after the ^C round was carried out.
   *
   * Gives up killGraceMs after the first kill that was carried out (`firstKillLandedAtMs`), once MIN_LANDED_KILLS
   * kills were: a shell that still does not answer while its container carries out kill after kill
   * ignores ^C for good. A container starved of CPU carries out its kills late and few, and its shell
   * is not to blame; that wait is bounded by MAX_KILL_WAIT_ROUNDS x killGraceMs from the first round
   * (`firstRoundAtMs`), and a container that stops answering altogether is the health check's to replace.
   */
  private escalate(): void {
    if (!this.wantsInterrupt()) return;
    const now = Date.now();
    this.firstRoundAtMs ||= now;
    const landedAt = this.firstKillLandedAtMs;
    const rounds = `${this.landedKills} of ${this.rounds} rounds of ^C and kill carried out`;
    if (landedAt !== null && now - landedAt >= this.timings.killGraceMs && this.landedKills >= MIN_LANDED_KILLS) {
      return this.hooks.giveUp(`${seconds(now - landedAt)} s after the first kill was carried out, ${rounds}`);
    }
    if (now - this.firstRoundAtMs >= MAX_KILL_WAIT_ROUNDS * this.timings.killGraceMs) {
      return this.hooks.giveUp(`${seconds(now - this.firstRoundAtMs)} s after the timeout, ${rounds}`);
    }
    this.rounds++;
    // ^C on every other round only, too: once the command's processes are dead, bash only has to
    // read and run the end-marker request, and a ^C landing meanwhile (a starved container's lane
    // delivers it late, well after the request was written) discards that. (The soak's shells that
    // never answered with every kill carried out turned out to be another late ^C, one landing in the
    // NEXT command's line: InFlightSignals.) A builtin loop, which only ^C stops, still gets one
    // every ~0.7 s.
    const interrupting = this.rounds % 2 === 1;
    const step = interrupting ? this.interruptSent() : this.killStarted();
    // A ^C that lands while bash is reading the earlier request (bash reads a pipe a byte at a time)
    // discards the part it read: ask again, or the shell could never answer. Extra answers carry this
    // command's nonce and fall between commands, where output is dropped.
    this.shell.write(endMarkerRequest(this.nonce));
    // The next round starts once this one's signal was carried out: a backend slow to signal (a busy
    // container, a queue of kills) must not make a healthy shell look unrecoverable, nor a kill
    // overtake the ^C before it.
    void step.then((landed) => {
      if (!this.wantsInterrupt()) return;
      if (landed && !interrupting) {
        this.landedKills++;
        this.firstKillLandedAtMs ??= Date.now();
      }
      this.timers.push(setTimeout(() => this.escalate(), this.timings.interruptGraceMs));
    });
  }

  /** A ^C to the shell's group; resolves once it was sent (true) or failed or passed its bound (false). */
  private interruptSent(): Promise<boolean> {
    return this.bounded(Promise.resolve(this.shell.interrupt(() => this.wantsInterrupt())));
  }

  /**
   * Kills what the command started; bounded, so a backend that cannot answer does not hold us
   * forever. True when the kill was carried out (whether or not it found anything), false when it
   * failed or did not come back within the bound.
   */
  private killStarted(): Promise<boolean> {
    return this.bounded(this.shell.killStartedSince(this.startedAtMs));
  }

  /** `op` tracked in flight; true once it settled well, false when it failed or took over killGraceMs. */
  private bounded(op: Promise<unknown>): Promise<boolean> {
    const bound = new Promise<boolean>((resolve) => this.timers.push(setTimeout(() => resolve(false), this.timings.killGraceMs)));
    this.inFlight.track(op);
    const done = op.then(
      () => true,
      () => false,
    );
    return Promise.race([done, bound]);
  }

  /** A ^C still has a purpose: the shell has not answered yet (else it hits the next command). */
  private wantsInterrupt(): boolean {
    return this.hooks.isCurrent() && !this.reaping;
  }
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}
