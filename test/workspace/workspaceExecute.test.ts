/**
 * The workspace API: /api/execute and its companions on a real bash in a real PTY (local, and
 * Docker through the docker project), jobs and their events in /api/workspace/logs.
 */
import { startTestBroker, eventually, type TestBroker } from '../helpers/broker';
import { exitOf, linesOf, type Event } from '../helpers/workspaceClient';

const STILL_RUNNING = '--- Process still running, more output will stream via WebSocket ---';

describe('workspace: /api/execute', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '3', BROKER_MAX_COMMAND_BYTES: '4096' });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);
  // A case that leaves a job running (it failed half-way) must not fail the next ones with 409:
  // the default workspace's leftover job is interrupted, and its exit waited for.
  afterEach(async () => {
    const r = await tb.post('/api/interrupt');
    if (r.status === 200 && r.json.job_id) await exitOf(tb, r.json.job_id as string, '', 90_000);
  }, 120_000);

  const execute = async (command: string, wait?: number, prefix = ''): Promise<Record<string, any>> => { // eslint-disable-line @typescript-eslint/no-explicit-any
    const r = await tb.post(`${prefix}/api/execute`, wait === undefined ? { command } : { command, wait });
    if (r.status !== 200) throw new Error(`execute failed: ${r.status} ${r.text}`);
    return r.json;
  };

  it('types the command into the terminal and answers with the job, its exit code and its output', async () => {
    const r = await execute('echo hello; echo "$((6 * 7))"; false');
    expect(r).toEqual({ job_id: expect.stringMatching(/^[0-9a-f]{32}$/), command: 'echo hello; echo "$((6 * 7))"; false', returncode: 1, stdout: 'hello\n42\n' });
    const logs = (await tb.get('/api/workspace/logs?offset=-20&limit=20')).json as Event[];
    const mine = logs.filter((e) => e.job_id === r.job_id);
    expect(mine.map((e) => e.type)).toEqual(['command', 'output', 'output', 'exit']);
    expect(mine[0]).toEqual({ seq_id: expect.any(Number), type: 'command', job_id: r.job_id, command: r.command, source: 'api' });
    expect(mine[1]).toEqual({ seq_id: mine[0].seq_id! + 1, type: 'output', job_id: r.job_id, command: r.command, source: 'api', stream: 'stdout', line: 'hello' });
    expect(mine[3]).toMatchObject({ type: 'exit', job_id: r.job_id, returncode: 1, duration_ms: expect.any(Number) });
  });

  it('takes one pool slot for the workspace: /health and /metrics count it', async () => {
    await execute('true');
    const health = await tb.health();
    expect(health).toMatchObject({ total_sessions: 3, in_use_sessions: 1, available_sessions: 2 });
    expect(await tb.metrics()).toMatch(/broker_sessions\{state="in_use"\} 1/);
  });

  it('keeps the shell state from one command to the next (one long-lived bash)', async () => {
    await execute('mkdir -p sub && cd sub && export WS_VAR=kept');
    expect((await execute('basename "$PWD"; echo $WS_VAR')).stdout).toBe('sub\nkept\n');
    await execute('cd ..');
  });

  it('runs a multi-line command as one job', async () => {
    const r = await execute('echo one\nfor i in 2 3; do\n  echo $i\ndone\n(exit 4)');
    expect(r).toMatchObject({ returncode: 4, stdout: 'one\n2\n3\n' });
  });

  it('gives a subshell, a function and `time` their output and exit code (the trap reaches into them)', async () => {
    expect(await execute('(echo in-subshell; exit 5)')).toMatchObject({ returncode: 5, stdout: 'in-subshell\n' });
    expect(await execute('f() { echo a; echo b; return 6; }; f')).toMatchObject({ returncode: 6, stdout: 'a\nb\n' });
    expect(await execute('time (echo timed) 2>/dev/null')).toMatchObject({ returncode: 0, stdout: 'timed\n' });
    expect(await execute('echo "$(echo substituted)"')).toMatchObject({ returncode: 0, stdout: 'substituted\n' });
  });

  it('strips ANSI in `line` and reports a syntax error as a job with status 2', async () => {
    expect((await execute("printf '\\033[31mred\\033[0m plain\\n'")).stdout).toBe('red plain\n');
    expect(await execute('if then')).toMatchObject({ returncode: 2 });
  });

  it('answers after `wait` with returncode null and the still-running line; a second execute gets 409 with the running job', async () => {
    const r = await execute('echo started; read -r _ </dev/null; sleep 2; echo finished', 0.5);
    expect(r.returncode).toBeNull();
    expect(r.stdout.endsWith(STILL_RUNNING)).toBe(true);
    const busy = await tb.post('/api/execute', { command: 'true' });
    expect(busy.status).toBe(409);
    expect(busy.json).toMatchObject({ code: 'workspace_busy', job_id: r.job_id });
    const exit = await exitOf(tb, r.job_id);
    expect(exit.returncode).toBe(0);
    expect(await linesOf(tb, r.job_id)).toEqual(['started', 'finished']);
  });

  it('interrupts the running job: it ends with its exit event (in a workspace of its own)', async () => {
    const id = (await tb.post('/workspaces')).json.workspace_id as string;
    const prefix = `/workspaces/${id}`;
    try {
      const r = await execute('sleep 600', 0, prefix);
      expect(r.returncode).toBeNull();
      const answer = await tb.post(`${prefix}/api/interrupt`);
      expect(answer.status).toBe(200);
      expect(answer.json).toEqual({ job_id: r.job_id });
      expect((await exitOf(tb, r.job_id, prefix, 90_000)).returncode).toBe(130);
    } finally {
      await tb.request('DELETE', prefix);
    }
  });

  it('sends keys to a prompt with /api/input; a partial line like a password prompt is flushed', async () => {
    const r = await execute("read -r -p 'Password: ' pw; echo \"got $pw\"", 0);
    await eventually(async () => (await linesOf(tb, r.job_id)).includes('Password: '), 30_000, 'the Password: line');
    expect((await tb.post('/api/input', { text: 'sesame\r' })).status).toBe(200);
    expect((await exitOf(tb, r.job_id)).returncode).toBe(0);
    expect(await linesOf(tb, r.job_id)).toContain('got sesame');
  });

  it.each([
    ['exit 3', 3],
    ['kill -9 $$', 137],
  ])('replaces a shell that ends (%s) at once, with an event saying so', async (command, code) => {
    const r = await execute(command);
    expect(r.returncode).toBe(code);
    let restarted: Event | undefined;
    await eventually(async () => {
      const logs = (await tb.get('/api/workspace/logs?offset=-10')).json as Event[];
      restarted = logs.find((e) => e.type === 'shell_restarted' && e.seq_id! > (logs.find((x) => x.job_id === r.job_id)?.seq_id ?? 0));
      return restarted !== undefined;
    });
    expect(restarted).toMatchObject({ exit_code: code });
    const after = await execute('echo fresh; echo $WS_VAR');
    expect(after).toMatchObject({ returncode: 0, stdout: 'fresh\n\n' });
    expect((await execute('basename "$PWD"')).stdout).toMatch(/^[0-9a-f]{32}\n$/); // back in the workspace directory
  });

  it('cuts a long command in its output events, keeping it whole in its command event', async () => {
    const command = `: ${'x'.repeat(2000)}; echo long`;
    const r = await execute(command);
    const mine = ((await tb.get('/api/workspace/logs?offset=-10')).json as Event[]).filter((e) => e.job_id === r.job_id);
    expect(mine[0]).toMatchObject({ type: 'command', command });
    expect(mine[1]).toMatchObject({ type: 'output', line: 'long', command: `${command.slice(0, 1024)}…` });
  });

  it('keeps invalid UTF-8 in the raw stream and replaces it in `line`', async () => {
    const r = await execute("printf 'a\\377\\376b\\n'");
    expect(r.stdout).toBe('a\ufffd\ufffdb\n');
  });

  it('refuses bad input: wait out of range 400, a command over BROKER_MAX_COMMAND_BYTES 413', async () => {
    for (const wait of [31, -1, 'soon']) {
      const r = await tb.post('/api/execute', { command: 'true', wait });
      expect(r.status).toBe(400);
      expect(r.json.code).toBe('bad_request');
    }
    expect((await tb.post('/api/execute', {})).status).toBe(400);
    const big = await tb.post('/api/execute', { command: `echo ${'x'.repeat(5000)}` });
    expect(big.status).toBe(413);
    expect(big.json.code).toBe('payload_too_large');
    expect((await tb.post('/api/input', { text: 5 })).status).toBe(400);
  });

  it.each(['/execute-async', '/execute-async/status', '/execute/worker'])('answers the deprecated %s with 410 pointing to /api/execute', async (path) => {
    for (const r of [await tb.post(path, { command: 'true' }), await tb.get(path)]) {
      expect(r.status).toBe(410);
      expect(r.json.code).toBe('deprecated_endpoint');
      expect(r.json.detail).toContain('/api/execute');
    }
  });

  it('pages the logs: absolute offsets, negative ones from the tail, limit bounds', async () => {
    const all = (await tb.get('/api/workspace/logs?offset=0&limit=1000')).json as Event[];
    expect(all.map((e) => e.seq_id)).toEqual(all.map((_, i) => i)); // gap-free from 0
    const page = (await tb.get('/api/workspace/logs?offset=2&limit=3')).json as Event[];
    expect(page.map((e) => e.seq_id)).toEqual([2, 3, 4]);
    const tail = (await tb.get('/api/workspace/logs?offset=-2')).json as Event[];
    expect(tail.map((e) => e.seq_id)).toEqual([all.length - 2, all.length - 1]);
    expect((await tb.get('/api/workspace/logs')).json).toHaveLength(Math.min(100, all.length));
    for (const q of ['limit=0', 'limit=1001', 'offset=x']) expect((await tb.get(`/api/workspace/logs?${q}`)).status).toBe(400);
  });

  it('serves named workspaces under /workspaces/{id}/..., each with its own shell and slot, until DELETE', async () => {
    const created = await tb.post('/workspaces');
    expect(created.status).toBe(201);
    const id = created.json.workspace_id as string;
    const prefix = `/workspaces/${id}`;
    expect(await execute('export WHERE=named; echo $WHERE', undefined, prefix)).toMatchObject({ returncode: 0, stdout: 'named\n' });
    expect((await execute('echo "[$WHERE]"')).stdout).toBe('[]\n');
    expect((await tb.health()).in_use_sessions).toBe(2);
    const logs = (await tb.get(`${prefix}/api/workspace/logs`)).json as Event[];
    expect(logs[0]).toMatchObject({ seq_id: 0, type: 'command', command: 'export WHERE=named; echo $WHERE' });
    expect((await tb.request('DELETE', `/workspaces/${id}`)).status).toBe(200);
    const gone = await tb.post(`${prefix}/api/execute`, { command: 'true' });
    expect(gone.status).toBe(404);
    expect(gone.json.code).toBe('workspace_not_found');
    await eventually(async () => (await tb.health()).in_use_sessions === 1 && (await tb.health()).available_sessions === 2);
  });

  it('answers 404 for an unknown workspace', async () => {
    for (const r of [await tb.post('/workspaces/nope/api/execute', { command: 'true' }), await tb.get('/workspaces/nope/api/workspace/logs'), await tb.request('DELETE', '/workspaces/nope')]) {
      expect(r.status).toBe(404);
      expect(r.json).toMatchObject({ code: 'workspace_not_found', detail: expect.stringContaining('nope') });
    }
  });
});

describe('workspace: BROKER_DEFAULT_WORKSPACE=0', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_DEFAULT_WORKSPACE: '0' });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('serves no default workspace on the root paths, named ones still', async () => {
    const r = await tb.post('/api/execute', { command: 'true' });
    expect(r.status).toBe(404);
    expect(r.json.detail).toContain('BROKER_DEFAULT_WORKSPACE=0');
    expect((await tb.health()).in_use_sessions).toBe(0);
    const id = (await tb.post('/workspaces')).json.workspace_id as string;
    expect((await tb.post(`/workspaces/${id}/api/execute`, { command: 'echo ok' })).json).toMatchObject({ returncode: 0, stdout: 'ok\n' });
  });
});

describe('workspace: a create whose client leaves', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    // A queued create outlives the test unless it leaves the queue when its client goes.
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_DEFAULT_WORKSPACE: '0', BROKER_ACQUIRE_TIMEOUT: '600' });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it('leaves the queue for a slot: nobody would learn its id, so no workspace is made and the slot stays free', async () => {
    const lease = await tb.acquire();
    const client = new AbortController();
    const create = tb.postAbortable('/workspaces', {}, client.signal);
    await eventually(async () => (await tb.get('/health')).json.queue_length === 1);
    client.abort();
    await expect(create).rejects.toThrow();
    await tb.release(lease);
    await eventually(async () => (await tb.health()).available_sessions === 1);
    expect((await tb.get('/health')).json.queue_length).toBe(0);
    expect((await tb.get('/workspaces')).json).toEqual([]);
    expect((await tb.health()).in_use_sessions).toBe(0);
  });
});
