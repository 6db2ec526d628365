/**
 * POST /api/interrupt ends the running job, whatever the timing (jobInterrupt.ts), on the local
 * backend and through the docker project on a real engine: right after the job was typed, with the
 * engine and the CPUs kept busy by other workspaces; a job that ignores ^C; a loop of builtins; a
 * job typed by a person. Each case has a workspace of its own, so a job that outlives its case
 * cannot fail the next one. Every wait is for an event, with generous bounds.
 */
import { startTestBroker, eventually, type TestBroker } from '../helpers/broker';
import { exitOf, linesOf, type Event } from '../helpers/workspaceClient';

/** A loaded engine can take seconds per step; the bound only stops a lost interrupt from hanging the suite. */
const EXIT_BOUND_MS = 90_000;
const JOBS_IN_A_ROW = 8;

describe('workspace: an interrupt ends the running job', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '2', BROKER_SESSIONS_PER_CONTAINER: '4', BROKER_DEFAULT_WORKSPACE: '0' });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  const newWorkspace = async (): Promise<{ prefix: string; end: () => Promise<void> }> => {
    const created = await tb.post('/workspaces');
    expect(created.status).toBe(201);
    const prefix = `/workspaces/${created.json.workspace_id as string}`;
    return { prefix, end: async () => void (await tb.request('DELETE', prefix)) };
  };

  /** `use` runs in a workspace of its own, ended whatever happens. */
  const inWorkspace = async (use: (prefix: string) => Promise<void>): Promise<void> => {
    const { prefix, end } = await newWorkspace();
    try {
      await use(prefix);
    } finally {
      await end();
    }
  };

  const start = async (prefix: string, command: string): Promise<string> => {
    let r = await tb.post(`${prefix}/api/execute`, { command, wait: 0 });
    if (r.status === 409 && r.json.code === 'workspace_busy') {
      // Another job runs: one bash began from the terminal after the last interrupt (seen once under
      // load). It must be no leftover of an interrupted line: it ends, and ran none of its words.
      const busy = r.json.job_id as string;
      await exitOf(tb, busy, prefix, EXIT_BOUND_MS);
      const ran = (await events(prefix)).filter((e) => e.job_id === busy && e.type === 'command');
      expect({ busy, ran, neverRan: ran.every((e) => !String(e.command).includes('never')) }).toMatchObject({ neverRan: true });
      r = await tb.post(`${prefix}/api/execute`, { command, wait: 0 });
    }
    expect(r.status).toBe(200);
    expect(r.json.returncode).toBeNull();
    return r.json.job_id as string;
  };

  const events = async (prefix: string): Promise<Event[]> => (await tb.get(`${prefix}/api/workspace/logs?offset=-1000&limit=1000`)).json as Event[];

  /**
   * Interrupts the job and waits for its exit event; one with another returncode than `expected`
   * fails with the job's events (undefined: any, as when the shell itself is replaced, whose status
   * the engine may not report).
   */
  const interrupt = async (prefix: string, jobId: string, expected?: number): Promise<void> => {
    const answer = await tb.post(`${prefix}/api/interrupt`);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ job_id: jobId });
    const exit = await exitOf(tb, jobId, prefix, EXIT_BOUND_MS);
    if (expected !== undefined && exit.returncode !== expected) expect({ returncode: exit.returncode, events: (await events(prefix)).slice(-12) }).toEqual({ returncode: expected });
  };

  it(`ends ${JOBS_IN_A_ROW} jobs in a row, each interrupted right after it was typed, with the engine and CPUs busy`, async () => {
    // Two workspaces burn both CPUs (bounded by `timeout`, and ended with their workspaces), a third
    // opens and closes workspaces (each a terminal the engine starts) until the case ends.
    const burners = [await newWorkspace(), await newWorkspace()];
    for (const b of burners) await start(b.prefix, "timeout 300 sh -c 'while :; do :; done' & timeout 300 sh -c 'while :; do :; done'; wait");
    let churning = true;
    const churn = (async () => {
      while (churning) {
        const w = await newWorkspace();
        await tb.post(`${w.prefix}/api/execute`, { command: 'ls /; true', wait: 5 });
        await w.end();
      }
    })();
    try {
      await inWorkspace(async (prefix) => {
        for (let i = 0; i < JOBS_IN_A_ROW; i++) {
          const job = await start(prefix, `echo started-${i}; sleep 600; echo never`);
          await interrupt(prefix, job, 130);
          expect(await linesOf(tb, job, prefix)).not.toContain('never');
        }
        expect((await tb.post(`${prefix}/api/execute`, { command: 'echo still-here' })).json).toMatchObject({ returncode: 0, stdout: 'still-here\n' });
      });
    } finally {
      churning = false;
      await churn;
      for (const b of burners) await b.end();
    }
  }, 600_000);

  it('kills a job that ignores ^C (trap "" INT): its exit event says 137, and the shell keeps its state', async () => {
    await inWorkspace(async (prefix) => {
      await tb.post(`${prefix}/api/execute`, { command: 'export KEPT=yes' });
      const job = await start(prefix, "trap '' INT; sleep 600");
      await interrupt(prefix, job, 137);
      expect((await tb.post(`${prefix}/api/execute`, { command: 'echo $KEPT' })).json).toMatchObject({ returncode: 0, stdout: 'yes\n' });
    });
  }, 180_000);

  it('stops a loop of builtins in bash itself with the typed ^C', async () => {
    await inWorkspace(async (prefix) => {
      const job = await start(prefix, 'echo looping; while :; do :; done');
      await eventually(async () => (await linesOf(tb, job, prefix)).includes('looping'), EXIT_BOUND_MS, 'the loop running');
      await interrupt(prefix, job, 130);
      expect((await events(prefix)).some((e) => e.type === 'shell_restarted')).toBe(false);
    });
  }, 180_000);

  it('replaces the shell of a builtin loop that ignores ^C, with events saying so', async () => {
    await inWorkspace(async (prefix) => {
      const job = await start(prefix, "trap '' INT; echo looping; while :; do :; done");
      await eventually(async () => (await linesOf(tb, job, prefix)).includes('looping'), EXIT_BOUND_MS, 'the loop running');
      await interrupt(prefix, job);
      const log = await events(prefix);
      expect(log.find((e) => e.type === 'interrupt_escalated')).toMatchObject({ job_id: job, reason: expect.stringContaining('outlived') });
      await eventually(async () => (await events(prefix)).some((e) => e.type === 'shell_restarted'), EXIT_BOUND_MS, 'the shell_restarted event');
      expect((await tb.post(`${prefix}/api/execute`, { command: 'echo fresh' })).json).toMatchObject({ returncode: 0, stdout: 'fresh\n' });
    });
  }, 180_000);

  it('ends an unfinished command waiting at the continuation prompt, and the shell takes the next one', async () => {
    await inWorkspace(async (prefix) => {
      const job = await start(prefix, 'echo "unclosed');
      await interrupt(prefix, job, 130);
      expect((await tb.post(`${prefix}/api/execute`, { command: 'echo closed' })).json).toMatchObject({ returncode: 0, stdout: 'closed\n' });
    });
  }, 180_000);

  it('ends a job a person typed into the terminal, and answers null when nothing runs', async () => {
    await inWorkspace(async (prefix) => {
      await tb.post(`${prefix}/api/execute`, { command: 'true' }); // the shell is at its prompt
      expect((await tb.post(`${prefix}/api/input`, { text: 'sleep 600\r' })).status).toBe(200);
      let job: Event | undefined;
      await eventually(async () => (job = (await events(prefix)).find((e) => e.type === 'command' && e.source === 'terminal')) !== undefined, EXIT_BOUND_MS, 'the typed command');
      await interrupt(prefix, job!.job_id as string, 130);
      const idle = await tb.post(`${prefix}/api/interrupt`);
      expect(idle.json).toEqual({ job_id: null });
    });
  }, 180_000);
});
