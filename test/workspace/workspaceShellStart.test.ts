/**
 * A workspace whose shell cannot start (its directory is gone, so each new bash ends before its first
 * prompt) answers whoever waits for a prompt at once, with why, instead of after the wait's bound
 * (src/core/workspace/workspace.ts): a 503 workspace_unavailable naming the shell's end. The
 * answer's reason is what is asserted, never its time.
 * @backend local
 */
import { startTestBroker, type TestBroker } from '../helpers/broker';

describe('workspace: a shell that cannot start', () => {
  let tb: TestBroker | null = null;
  afterEach(async () => {
    await tb?.close();
    tb = null;
  });

  it('answers 503 with the reason, not "no prompt within"', async () => {
    const b = (tb = await startTestBroker({ BROKER_BACKEND: 'local', BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1' }));
    const first = await b.post('/api/execute', { command: 'echo started' });
    expect(first.json).toMatchObject({ returncode: 0, stdout: 'started\n' });
    // The directory goes, then the shell: every replacement ends before its first prompt.
    await b.post('/api/execute', { command: 'cd / && rm -rf -- "$OLDPWD" && exit', wait: 0 });
    // Until the shell's exit is seen the removing job still runs (409, a job is running): wait for that state to pass.
    let next = await b.post('/api/execute', { command: 'echo again' });
    for (let i = 0; i < 600 && next.status === 409; i++) {
      await new Promise((r) => setTimeout(r, 100));
      next = await b.post('/api/execute', { command: 'echo again' });
    }
    expect(next.status).toBe(503);
    expect(next.json).toEqual({ code: 'workspace_unavailable', detail: expect.stringMatching(/its shell (ended before its first prompt|could not be started)/) });
  });
});
