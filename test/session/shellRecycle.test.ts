/**
 * The recycle line (shellRecycle.ts) against a real interactive bash on pipes, as the backends run
 * it: a fresh bash announces itself in the wanted directory, and an exec that cannot happen is said
 * at once instead of after the recycle's timeout.
 * @backend any
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { FRESH_ANSWER, RECYCLE_TIMEOUT_MS, freshInCwd, recycleExecLine } from '../../src/backends/shellRecycle';
import { ansiCQuote } from '../../src/core/session/framing';

let bash: ChildProcessWithoutNullStreams | null = null;

afterEach(() => {
  bash?.kill('SIGKILL');
  bash = null;
});

function startBash(): ChildProcessWithoutNullStreams {
  bash = spawn('bash', ['--norc', '--noprofile', '--noediting', '-i'], { cwd: '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  bash.stdin.write('PS1=;PS2=\n');
  return bash;
}

/** Writes `line`, resolves with the first match of `pattern` on stdout after it (rejects after `withinMs`). */
function answer(shell: ChildProcessWithoutNullStreams, line: string, pattern: RegExp, withinMs: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString('latin1');
      const m = pattern.exec(seen);
      if (!m) return;
      clearTimeout(timer);
      shell.stdout.off('data', onData);
      resolve(m);
    };
    const timer = setTimeout(() => {
      shell.stdout.off('data', onData);
      reject(new Error(`no ${String(pattern)} within ${withinMs} ms; stdout: ${JSON.stringify(seen)}`));
    }, withinMs);
    shell.stdout.on('data', onData);
    shell.stdin.write(line);
  });
}

describe('recycleExecLine', () => {
  it('a fresh bash in place announces itself in the wanted directory, its rc file run', async () => {
    const shell = startBash();
    const pidBefore = shell.pid;
    const fresh = await answer(shell, recycleExecLine(ansiCQuote('/tmp'), '/bin/bash', 'PS1=;PS2=;X=from-rc'), FRESH_ANSWER, RECYCLE_TIMEOUT_MS);
    expect(freshInCwd(fresh)).toBe(true);
    const state = await answer(shell, 'builtin printf "state=%s:%s:%s\\n" "$PWD" "$X" "$$"\n', /state=(.*)\n/, RECYCLE_TIMEOUT_MS);
    expect(state[1]).toBe(`/tmp:from-rc:${pidBefore}`);
  });

  it('an exec that fails (no such bash) is announced as noexec by the old bash, not left to the timeout', async () => {
    const shell = startBash();
    // Within the recycle's own timeout: without the announcement the caller would wait all of it.
    const failed = await answer(shell, recycleExecLine(ansiCQuote('/tmp'), '/nonexistent/bash', 'PS1='), FRESH_ANSWER, RECYCLE_TIMEOUT_MS);
    expect(failed[1]).toBe('noexec');
    expect(freshInCwd(failed)).toBe(false);
  });
});
