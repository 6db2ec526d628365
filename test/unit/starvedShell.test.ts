/**
 * BashSession's timeout path with a shell that is slow to come back after the ^C: a backend that says
 * its shell is starved of CPU (ShellProcess.isStarved) gets more time, up to STARVED_GRACE_FACTOR
 * kill graces; any other shell is given up after one. A scripted shell (a pure unit around
 * BashSession): the real starvation is exercised by the Docker suite and the soak.
 */
import { BashSession, ShellDiedError, STARVED_GRACE_FACTOR } from '../../src/core/bashSession';
import type { ShellListener, ShellProcess } from '../../src/core/backend';

const TIMINGS = { interruptGraceMs: 5, killGraceMs: 60, readyTimeoutMs: 2_000 };

/** Answers framed commands at once, except `hang`, whose end marker waits for `comeBack()`. */
class ScriptedShell implements ShellProcess {
  readonly description = 'scripted shell';
  starved = true;
  starvedAsked = 0;
  private listener: ShellListener | null = null;
  private endRequested: string | null = null;

  setListener(listener: ShellListener): void {
    this.listener = listener;
  }

  write(text: string): void {
    for (const line of text.split('\n')) {
      const command = /^__bs (\S+);eval (.*) <\/dev\/null;__be \S+$/.exec(line);
      if (command) {
        this.emit(`${command[1]}s`, `${command[1]}s`);
        if (!command[2].includes('hang')) this.emit(`${command[1]}e0\n`, `${command[1]}e\n`);
      }
      const request = /^__be (\S+)$/.exec(line);
      if (request) this.endRequested = request[1];
    }
  }

  /** The starved shell finally runs: it answers the end marker request sent after the ^C. */
  comeBack(): void {
    if (this.endRequested) this.emit(`${this.endRequested}e130\n`, `${this.endRequested}e\n`);
  }

  interrupt(): void {}
  async killStartedSince(): Promise<number> {
    return 0;
  }
  async close(): Promise<void> {}
  async isStarved(): Promise<boolean> {
    this.starvedAsked++;
    return this.starved;
  }

  private emit(out: string, err: string): void {
    this.listener?.onData('stdout', Buffer.from(out));
    this.listener?.onData('stderr', Buffer.from(err));
  }
}

async function startedSession(): Promise<{ shell: ScriptedShell; session: BashSession }> {
  const shell = new ScriptedShell();
  const session = new BashSession(shell, TIMINGS);
  await session.start();
  return { shell, session };
}

describe('a timed-out command whose shell is slow to come back', () => {
  it('is kept while the backend says the shell is starved, and answered as a timeout once it is back', async () => {
    const { shell, session } = await startedSession();
    const result = session.execute('hang', { timeoutMs: 10, maxOutputBytes: 1024 });
    // Past one kill grace the session would have been given up; starved, it is still waited for.
    await new Promise((r) => setTimeout(r, TIMINGS.killGraceMs * 3));
    expect(shell.starvedAsked).toBeGreaterThan(0);
    expect(session.alive).toBe(true);
    shell.comeBack();
    await expect(result).resolves.toMatchObject({ timedOut: true, returnCode: -1 });
    expect(session.alive).toBe(true);
    expect((await session.execute('echo', { timeoutMs: 1_000, maxOutputBytes: 1024 })).returnCode).toBe(0);
  });

  it('is given up after one kill grace when the backend says it is not starved', async () => {
    const { shell, session } = await startedSession();
    shell.starved = false;
    await expect(session.execute('hang', { timeoutMs: 10, maxOutputBytes: 1024 })).rejects.toBeInstanceOf(ShellDiedError);
    expect(shell.starvedAsked).toBe(1);
    expect(session.alive).toBe(false);
  });

  it('is given up after STARVED_GRACE_FACTOR kill graces even while starved', async () => {
    const { shell, session } = await startedSession();
    const started = Date.now();
    await expect(session.execute('hang', { timeoutMs: 10, maxOutputBytes: 1024 })).rejects.toThrow(/did not come back/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMINGS.killGraceMs * STARVED_GRACE_FACTOR);
    expect(shell.starvedAsked).toBeGreaterThan(1);
  });
});
