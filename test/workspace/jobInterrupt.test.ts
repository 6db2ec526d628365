/**
 * JobInterrupt's rounds against a stand-in terminal (the real one is in workspaceInterrupt.test.ts):
 * what it sends, in which order, and that it stops at the job's end. The stand-in records each
 * action and can hold one open, so the tests wait on recorded states, never on elapsed time.
 * @backend any
 */
import { JobInterrupt, type InterruptActions, type InterruptedJob, type InterruptTimings } from '../../src/core/workspace/jobInterrupt';

type Step = 'ctrl-c' | 'fg-int' | 'kill' | 'replace';

class StandIn {
  readonly steps: Step[] = [];
  ended = false;
  lineRead = true;
  private finish!: () => void;
  readonly done = new Promise<void>((resolve) => (this.finish = resolve));
  /** While set, the next actions wait on it (a slow container). */
  gate: Promise<void> | null = null;
  /** Concurrent actions seen at once, at most. */
  maxInFlight = 0;
  private inFlight = 0;
  private waiters: (() => void)[] = [];

  readonly job: InterruptedJob;

  constructor() {
    const state = (): { ended: boolean; lineRead: boolean } => this;
    this.job = {
      id: 'job1',
      typedAtMs: 1234,
      get lineRead() {
        return state().lineRead;
      },
      get ended() {
        return state().ended;
      },
      done: this.done,
    };
  }

  end(): void {
    this.ended = true;
    this.finish();
  }

  actions(ownsTerminal: () => boolean): InterruptActions {
    const record = async <T>(step: Step, value: T): Promise<T> => {
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      this.steps.push(step);
      this.wake();
      if (this.gate) await this.gate;
      this.inFlight--;
      return value;
    };
    return {
      pressCtrlC: () => void this.steps.push('ctrl-c'),
      interruptForeground: () => record('fg-int', ownsTerminal()),
      killStartedSince: (since) => {
        expect(since).toBe(1234);
        return record('kill', 1);
      },
      replaceShell: () => {
        this.steps.push('replace');
        this.wake();
      },
    };
  }

  /** Resolves once `match` holds over the recorded steps. */
  async until(match: (steps: Step[]) => boolean): Promise<void> {
    while (!match(this.steps)) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

const FAST: InterruptTimings = { roundMs: 1, killAfterMs: 40, replaceAfterMs: 60, typeEveryMs: 0 };

describe('JobInterrupt', () => {
  it('signals the job while it owns the terminal, types no ^C then, and stops when the job ends', async () => {
    const s = new StandIn();
    const interrupt = new JobInterrupt(s.job, s.actions(() => true), { ...FAST, killAfterMs: 60_000 });
    interrupt.start();
    expect(s.steps).toEqual(['fg-int']);
    await s.until((steps) => steps.filter((x) => x === 'fg-int').length >= 3);
    s.end();
    await s.done;
    const seen = s.steps.length;
    expect(interrupt.active).toBe(false);
    // A round already scheduled finds the job ended and sends nothing.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(s.steps.length).toBe(seen);
    expect(s.steps.every((x) => x === 'fg-int')).toBe(true);
  });

  it('types ^C while bash owns the terminal only once bash has read the job\'s line (never into a line it reads)', async () => {
    const s = new StandIn();
    s.lineRead = false;
    new JobInterrupt(s.job, s.actions(() => false), { ...FAST, killAfterMs: 60_000 }).start();
    await s.until((steps) => steps.filter((x) => x === 'fg-int').length >= 3);
    expect(s.steps).not.toContain('ctrl-c');
    s.lineRead = true;
    await s.until((steps) => steps.filter((x) => x === 'ctrl-c').length >= 3);
    s.end();
    // Each ^C follows a look that found bash owning the terminal.
    s.steps.forEach((x, i) => x === 'ctrl-c' && expect(s.steps[i - 1]).toBe('fg-int'));
  });

  it('kills what the job started once the grace has passed, in rounds that take turns with SIGINTs', async () => {
    const s = new StandIn();
    new JobInterrupt(s.job, s.actions(() => true), { ...FAST, replaceAfterMs: 60_000 }).start();
    await s.until((steps) => steps.filter((x) => x === 'kill').length >= 3);
    s.end();
    const afterFirstKill = s.steps.slice(s.steps.indexOf('kill') - 1);
    for (let i = 0; i + 1 < afterFirstKill.length; i++) expect(afterFirstKill[i]).not.toBe(afterFirstKill[i + 1]);
    expect(s.steps).not.toContain('replace');
  });

  it('replaces the shell only after a kill was carried out and the job outlived it', async () => {
    const s = new StandIn();
    let release!: () => void;
    s.gate = new Promise<void>((resolve) => (release = resolve));
    new JobInterrupt(s.job, s.actions(() => false), FAST).start();
    await s.until((steps) => steps.includes('fg-int'));
    // The container is slow: nothing more is asked of it while a signal is under way, however long.
    await new Promise((resolve) => setTimeout(resolve, FAST.killAfterMs + FAST.replaceAfterMs));
    expect(s.steps).toEqual(['fg-int']);
    s.gate = null;
    release();
    await s.until((steps) => steps.includes('replace'));
    expect(s.maxInFlight).toBe(1);
    expect(s.steps.indexOf('kill')).toBeGreaterThan(0);
    expect(s.steps.indexOf('kill')).toBeLessThan(s.steps.indexOf('replace'));
    expect(s.steps.filter((x) => x === 'replace')).toHaveLength(1);
    s.end();
  });
});
