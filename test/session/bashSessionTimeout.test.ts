/**
 * BashSession's timeout escalation, around a scripted shell (a pure unit: the real-bash behaviour is
 * tested in test/session/timeouts.test.ts and the Docker suite). What is pinned here is when a session
 * gives up on a shell: killGraceMs after its first kill was carried out (not after it was asked for)
 * and once 10 kills were, because a container starved of CPU runs kills late and few, and its shell
 * is not to blame for that; 3 kill graces at most.
 * @backend any
 */
import { BashSession, ShellDiedError, type BashSessionTimings } from '../../src/core/session/bashSession';
import type { ShellListener, ShellProcess } from '../../src/core/ports/backend';

const TIMINGS: BashSessionTimings = { interruptGraceMs: 20, killGraceMs: 200, readyTimeoutMs: 1_000 };

/** Speaks the framing (src/core/session/framing.ts) for one command that never ends by itself. */
class ScriptedShell implements ShellProcess {
  readonly description = 'scripted shell';
  listener: ShellListener | null = null;
  /** Set by the test: whether a `__be NONCE` request (after a ^C) is answered. */
  answersEndRequests = false;
  /** Set by the test: whether a command line runs (and ends) at once. */
  answersCommands = false;
  kills = 0;
  constructor(private readonly kill: () => Promise<number>) {}
  setListener(listener: ShellListener): void {
    this.listener = listener;
  }
  write(text: string): void {
    const started = /^__bs ([0-9a-f]+);/.exec(text);
    if (started) this.events.push(`line ${started[1]}`);
    if (started && this.answersCommands) {
      this.emit('stdout', `${started[1]}s${started[1]}e0\n`);
      this.emit('stderr', `${started[1]}s${started[1]}e\n`);
      return;
    }
    if (started) {
      this.emit('stdout', `${started[1]}s`);
      this.emit('stderr', `${started[1]}s`);
      return;
    }
    const asked = /^__be ([0-9a-f]+)\n$/.exec(text);
    if (asked && this.lateInterruptMs !== null) return this.answerLater(asked[1], 30);
    if (asked && this.answersEndRequests) {
      this.emit('stdout', `${asked[1]}e130\n`);
      this.emit('stderr', `${asked[1]}e\n`);
    }
  }
  interrupts = 0;
  /** Set by the test: a ^C lands this long after it is sent, and discards a request bash is running. */
  lateInterruptMs: number | null = null;
  private pendingAnswer: NodeJS.Timeout | null = null;
  /** Set by the test: each ^C is delivered (its promise settles) this long after it was sent. */
  interruptDeliveryMs: number | null = null;
  /** What happened, in order: `^C delivered`, and each command line written (`line <nonce>`). */
  readonly events: string[] = [];
  /** Every ^C sent and delivered and every kill asked for, in order, with ms since the first. */
  readonly signals: { what: '^C sent' | '^C delivered' | 'kill'; atMs: number }[] = [];
  private signalAt(what: '^C sent' | '^C delivered' | 'kill'): void {
    const t0 = this.signals[0]?.atMs ?? performance.now();
    this.signals.push({ what, atMs: performance.now() });
    if (this.signals.length === 1) return;
    this.signals[this.signals.length - 1].atMs -= t0;
  }
  interrupt(): void | Promise<void> {
    this.interrupts++;
    this.signalAt('^C sent');
    if (this.interruptDeliveryMs !== null) {
      return sleep(this.interruptDeliveryMs).then(() => {
        this.events.push('^C delivered');
        this.signalAt('^C delivered');
      });
    }
    if (this.lateInterruptMs !== null) {
      setTimeout(() => {
        if (this.pendingAnswer) clearTimeout(this.pendingAnswer);
        this.pendingAnswer = null;
      }, this.lateInterruptMs);
    }
  }
  /** A request bash answers `ms` after reading it, unless a ^C lands first. */
  answerLater(nonce: string, ms: number): void {
    if (this.pendingAnswer) return;
    this.pendingAnswer = setTimeout(() => {
      this.pendingAnswer = null;
      this.emit('stdout', `${nonce}e130\n`);
      this.emit('stderr', `${nonce}e\n`);
    }, ms);
  }
  killStartedSince(): Promise<number> {
    this.kills++;
    this.signalAt('kill');
    return this.kill();
  }
  async close(): Promise<void> {}
  private emit(stream: 'stdout' | 'stderr', text: string): void {
    this.listener?.onData(stream, Buffer.from(text));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `work` on jest's fake clock, a millisecond at a time, until it settles. The escalation's
 * outcome turns on how many rounds fit in a grace: on the real clock a busy machine (other suites
 * beside this one) delays every timer, and a case's rounds no longer fit. Promises and I/O callbacks
 * stay real, so each step runs everything that step made ready.
 */
async function onFakeClock<T>(work: Promise<T>): Promise<T> {
  let settled = false;
  work.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let ms = 0; !settled && ms < 60_000; ms++) await jest.advanceTimersByTimeAsync(1);
  return work;
}

describe('BashSession: giving up on a timed-out shell', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('a kill carried out late (after a whole kill grace) does not count against the shell', async () => {
    const t0 = Date.now();
    // Every kill asked for lands 450 ms after the start: the first round's kill misses its 200 ms bound.
    const shell = new ScriptedShell(async () => {
      await sleep(Math.max(0, t0 + 450 - Date.now()));
      shell.answersEndRequests = true; // the command's processes are dead: bash comes back
      return 1;
    });
    const session = new BashSession(shell, TIMINGS);
    const result = await onFakeClock(session.execute('sleep 100', { timeoutMs: 50, maxOutputBytes: 1024 }));
    expect(result.timedOut).toBe(true);
    expect(result.returnCode).toBe(-1);
    expect(session.alive).toBe(true);
    expect(shell.kills).toBeGreaterThanOrEqual(2);
  });

  it('kills carried out and still no answer: the shell is declared dead', async () => {
    const shell = new ScriptedShell(async () => 0);
    const session = new BashSession(shell, TIMINGS);
    let died: string | null = null;
    session.onDeath((reason) => (died = reason));
    await expect(onFakeClock(session.execute('trap "" INT; while :; do :; done', { timeoutMs: 50, maxOutputBytes: 1024 }))).rejects.toThrow(ShellDiedError);
    // The detail says what the escalation saw: the kills landed, the shell still did not answer.
    expect(died).toMatch(/did not come back after the command timed out: \d+\.\d s after the first kill was carried out, (\d+) of \d+ rounds of \^C and kill carried out$/);
    expect(Number(/, (\d+) of/.exec(died ?? '')?.[1])).toBeGreaterThanOrEqual(10); // the kills kept landing
    expect(session.alive).toBe(false);
  });

  it('kills carried out slowly (a starved container): the shell gets past the grace, up to 3 graces, and may come back', async () => {
    const t0 = Date.now();
    // Each kill lands 150 ms after it was asked for: ~4 rounds per 200 ms grace, never 20 in it.
    const shell = new ScriptedShell(async () => {
      await sleep(150);
      if (Date.now() - t0 > 450) shell.answersEndRequests = true; // back after 2+ graces
      return 1;
    });
    const session = new BashSession(shell, TIMINGS);
    const result = await onFakeClock(session.execute('sleep 100', { timeoutMs: 50, maxOutputBytes: 1024 }));
    expect(result.timedOut).toBe(true);
    expect(session.alive).toBe(true);
  });

  it("late ^Cs (a starved container's lane): rounds without a ^C let the shell answer its end-marker request", async () => {
    // The command's processes are dead (each kill finds none); bash needs 30 ms to run a request, and
    // a ^C lands 10 ms after it was sent, discarding the request bash is running.
    const shell = new ScriptedShell(async () => {
      await sleep(5);
      return 0;
    });
    shell.lateInterruptMs = 10;
    const session = new BashSession(shell, TIMINGS);
    const result = await onFakeClock(session.execute('sleep 100', { timeoutMs: 50, maxOutputBytes: 1024 }));
    expect(result.timedOut).toBe(true);
    expect(session.alive).toBe(true);
  });

  it("a ^C delivered late (after its command was answered) is waited for before the next command's line is written", async () => {
    const shell = new ScriptedShell(async () => 1);
    shell.answersEndRequests = true;
    shell.interruptDeliveryMs = 150; // the ^C sent at the timeout lands long after the answer
    const session = new BashSession(shell, TIMINGS);
    const first = await onFakeClock(session.execute('sleep 100', { timeoutMs: 20, maxOutputBytes: 1024 }));
    expect(first.timedOut).toBe(true);
    expect(shell.events).toEqual([expect.stringMatching(/^line /)]); // answered; the ^C still on its way
    shell.answersCommands = true;
    const second = await onFakeClock(session.execute('true', { timeoutMs: 5_000, maxOutputBytes: 1024 }));
    expect(second.returnCode).toBe(0);
    expect(shell.events.slice(1)).toEqual(['^C delivered', expect.stringMatching(/^line /)]);
  });

  it('never sends a kill with a ^C: ^C, a grace after its delivery ^C again, a grace after that the kill', async () => {
    // A child that takes a ^C without dying dies of the next; a SIGKILL landing before that next ^C
    // is a death bash takes for the child's own business, and it runs the rest of the line.
    const shell = new ScriptedShell(async () => {
      if (shell.kills >= 2) shell.answersEndRequests = true;
      return 1;
    });
    shell.interruptDeliveryMs = 60; // each ^C lands 60 ms after it was sent (a busy container's lane)
    const session = new BashSession(shell, TIMINGS);
    const result = await onFakeClock(session.execute('sleep 100', { timeoutMs: 20, maxOutputBytes: 1024 }));
    expect(result.timedOut).toBe(true);
    const order = shell.signals.map((s) => s.what);
    expect(order.slice(0, 6)).toEqual(['^C sent', '^C delivered', '^C sent', '^C delivered', 'kill', '^C sent']);
    const at = (i: number): number => (i === 0 ? 0 : shell.signals[i].atMs);
    // Each round waits for the last one's signal to be delivered, then the interrupt grace (20 ms).
    expect(at(2) - at(1)).toBeGreaterThanOrEqual(TIMINGS.interruptGraceMs - 1);
    expect(at(4) - at(3)).toBeGreaterThanOrEqual(TIMINGS.interruptGraceMs - 1);
  });

  it('kills that never come back: the shell is declared dead all the same, later', async () => {
    const shell = new ScriptedShell(() => new Promise<number>(() => undefined));
    const session = new BashSession(shell, TIMINGS);
    await expect(onFakeClock(session.execute('sleep 100', { timeoutMs: 50, maxOutputBytes: 1024 }))).rejects.toThrow(/did not come back .*: \d+\.\d s after the timeout, 0 of \d+ rounds of \^C and kill carried out$/);
    expect(shell.kills).toBeGreaterThanOrEqual(2);
  });
});
