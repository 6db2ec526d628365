/**
 * A session's command deadlines share one timer (src/core/session/deadlineTimer.ts), armed by one command and
 * possibly still pending during the next. Pinned here: a later, shorter deadline still fires, and a
 * timer armed for an earlier command's deadline does not cut a later, longer one short.
 * @backend any
 */
import { BashSession } from '../../src/core/session/bashSession';
import type { ShellListener, ShellProcess } from '../../src/core/ports/backend';

/** Speaks the framing: `quick` answers at once, `wait N` after N ms, anything else never (until ^C's `__be`). */
class ScriptedShell implements ShellProcess {
  readonly description = 'scripted shell';
  private listener: ShellListener | null = null;
  setListener(listener: ShellListener): void {
    this.listener = listener;
  }
  write(text: string): void {
    const line = /^__bs ([0-9a-f]+);eval \$'(.*)' <\/dev\/null;__be/.exec(text);
    if (line) {
      const [, nonce, command] = line;
      this.emit(`${nonce}s`, `${nonce}s`);
      const wait = /^wait (\d+)$/.exec(command);
      if (command === 'quick') this.end(nonce, 0);
      else if (wait) setTimeout(() => this.end(nonce, 0), Number(wait[1]));
      return;
    }
    const asked = /^__be ([0-9a-f]+)\n$/.exec(text);
    if (asked) this.end(asked[1], 130);
  }
  interrupt(): void {}
  async killStartedSince(): Promise<number> {
    return 0;
  }
  async close(): Promise<void> {}
  private end(nonce: string, status: number): void {
    this.emit(`${nonce}e${status}\n`, `${nonce}e\n`);
  }
  private emit(stdout: string, stderr: string): void {
    this.listener?.onData('stdout', Buffer.from(stdout));
    this.listener?.onData('stderr', Buffer.from(stderr));
  }
}

const TIMINGS = { interruptGraceMs: 20, killGraceMs: 200, readyTimeoutMs: 1_000 };
const run = (session: BashSession, command: string, timeoutMs: number) => session.execute(command, { timeoutMs, maxOutputBytes: 1024 });

describe('BashSession: command deadlines on one timer', () => {
  it('a short deadline after a long one still times out', async () => {
    const session = new BashSession(new ScriptedShell(), TIMINGS);
    expect((await run(session, 'quick', 60_000)).timedOut).toBe(false);
    const result = await run(session, 'never', 50);
    expect(result.timedOut).toBe(true);
    expect(result.returnCode).toBe(-1);
    await session.close();
  });

  it('the timer armed for an earlier, shorter deadline does not cut a later command short', async () => {
    const session = new BashSession(new ScriptedShell(), TIMINGS);
    expect((await run(session, 'quick', 30)).timedOut).toBe(false);
    // The 30 ms timer goes off while this command runs (its answer is due later): it must re-arm.
    const result = await run(session, 'wait 120', 60_000);
    expect(result.timedOut).toBe(false);
    expect(result.returnCode).toBe(0);
    await session.close();
  });

  it('every command still gets its own deadline after many quick ones', async () => {
    const session = new BashSession(new ScriptedShell(), TIMINGS);
    for (let i = 0; i < 100; i++) expect((await run(session, 'quick', 60_000 - i)).timedOut).toBe(false);
    expect((await run(session, 'never', 40)).timedOut).toBe(true);
    await session.close();
  });
});
