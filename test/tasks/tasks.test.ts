/**
 * Task sandboxes end to end on Docker: a real broker, a real task container running the
 * daemon and the real Pi agent, a local bare repo, and a stub LLM speaking Anthropic's streaming
 * format. Waits are on events, with generous bounds; nothing is timed.
 * @backend docker
 */
import { describeDocker } from '../helpers/dockerSuite';
import { endsWithToolResult, lastUserText } from '../../devtools/stubLlm';
import { consecutive, SseReader, type StreamEnvelope } from '../../devtools/taskStreams';
import { README, SECRET_KEY, taskFixture, type TaskFixture } from '../helpers/taskSuite';
import type { TestBroker } from '../helpers/broker';

jest.setTimeout(240_000);

describeDocker('task sandboxes (Docker)', () => {
  let fx: TaskFixture;
  let tb: TestBroker;
  /** Released by a test to let a held answer finish. */
  let release: () => void = () => undefined;
  const readers: SseReader[] = [];

  beforeAll(async () => {
    fx = await taskFixture('e2e');
    tb = await fx.startBroker();
    fx.stub.reply = (req) => {
      const text = lastUserText(req);
      if (endsWithToolResult(req)) return { text: ['The README says: ', text.trim()] };
      if (text.includes('read the readme')) return { text: ['Reading it.'], toolCalls: [{ name: 'bash', input: { command: 'cat README.md' } }] };
      if (text.includes('slow question')) return { text: ['Thinking', ' slowly... done.'], hold: new Promise<void>((r) => (release = r)) };
      if (text.includes('hang forever')) return { text: ['Starting', ' never sent'], hold: new Promise<void>((r) => (release = r)) };
      return { text: [`You said: ${text}`] };
    };
  });

  afterAll(async () => {
    release();
    await Promise.all(readers.map((r) => r.close()));
    await tb?.close();
    await fx?.close();
  });

  async function open(id: string, stream: 'control' | 'coding', query = '', headers: Record<string, string> = {}): Promise<SseReader> {
    const reader = await SseReader.open(`${tb.url}/sandboxes/${id}/stream/${stream}${query}`, headers);
    readers.push(reader);
    expect(reader.status).toBe(200);
    return reader;
  }

  async function create(body: Record<string, unknown>): Promise<string> {
    const r = await tb.post('/sandboxes', body);
    expect(r.status).toBe(201);
    return r.json.id as string;
  }

  const finalTurn = (e: StreamEnvelope): boolean => e.event.type === 'turn_end' && e.event.message?.stopReason !== 'toolUse';

  it('creates a sandbox with a prompt: the agent runs bash on the repo and answers, every event in order', async () => {
    const r = await tb.post('/sandboxes', { name: 'readme', repo: 'acme/demo-repo', prompt: 'Please read the readme' });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ name: 'readme', repo: 'acme/demo-repo', status: 'running' });
    const id = r.json.id as string;
    const control = await open(id, 'control');
    const coding = await open(id, 'coding');
    await coding.until((es) => es.some(finalTurn), 'the final turn_end');
    await control.untilType('prompt_queued');

    expect(control.types().slice(0, 4)).toEqual(['sandbox_ready', 'repo_cloned', 'init_complete', 'prompt_queued']);
    expect(control.envelopes[3].event).toMatchObject({ message: 'Please read the readme', initial: true });
    const types = coding.types();
    const order = ['turn_start', 'tool_execution_start', 'tool_execution_end', 'turn_end', 'turn_start', 'message_end', 'turn_end'];
    let at = -1;
    for (const type of order) {
      at = types.indexOf(type, at + 1);
      expect(at).toBeGreaterThanOrEqual(0);
    }
    const toolEnd = coding.envelopes.find((e) => e.event.type === 'tool_execution_end')!.event;
    expect(toolEnd).toMatchObject({ toolName: 'bash', isError: false });
    expect(JSON.stringify(toolEnd.result)).toContain('demo-repo: it prints the answer 42');
    const final = coding.envelopes.filter((e) => e.event.type === 'message_end' && e.event.message.role === 'assistant').pop()!;
    expect(final.event.message.content[0].text).toContain(README.trim());
    // The envelope exactly, a cursor per stream rising by one, and the SSE id is the cursor.
    for (const reader of [control, coding]) {
      expect(consecutive(reader.envelopes)).toBe(true);
      for (const e of reader.envelopes) {
        expect(Object.keys(e).sort()).toEqual(['cursor', 'event']);
        expect(typeof e.event.timestamp).toBe('number');
      }
      expect(reader.frames.filter((f) => f.data).map((f) => Number(f.id))).toEqual(reader.envelopes.map((e) => e.cursor));
    }
    // The stub was called with Core's key, through the relay.
    expect(fx.stub.requests[0].headers['x-api-key']).toBe(SECRET_KEY);
  });

  it('queues a follow-up sent during a turn and answers it after', async () => {
    const id = await create({ repo: 'acme/demo-repo', prompt: 'a slow question' });
    const control = await open(id, 'control');
    const coding = await open(id, 'coding');
    await coding.until((es) => es.some((e) => e.event.type === 'message_update'), 'the slow answer streaming');
    const r = await tb.post(`/sandboxes/${id}/prompt`, { message: 'and a follow-up' });
    expect(r.status).toBe(202);
    expect(r.json).toMatchObject({ queued: true });
    await control.untilType('prompt_queued', (e) => e.event.message === 'and a follow-up');
    expect(control.envelopes.find((e) => e.event.message === 'and a follow-up')!.event.followUp).toBe(true);
    release();
    await coding.until((es) => es.filter(finalTurn).length >= 2, 'both answers');
    const answers = coding.envelopes.filter((e) => e.event.type === 'message_end' && e.event.message.role === 'assistant').map((e) => e.event.message.content[0].text);
    expect(answers).toEqual(['Thinking slowly... done.', 'You said: and a follow-up']);
  });

  it('aborts a turn mid-stream: the turn ends with its turn_end, and the sandbox takes prompts again', async () => {
    const id = await create({ repo: 'acme/demo-repo', prompt: 'hang forever' });
    const coding = await open(id, 'coding');
    await coding.until((es) => es.some((e) => e.event.type === 'message_update'), 'the answer streaming');
    const before = fx.stub.requests.length;
    expect((await tb.post(`/sandboxes/${id}/abort`)).status).toBe(202);
    const end = await coding.untilType('turn_end');
    expect(end.event.message.stopReason).toBe('aborted');
    await expect(waitFor(() => fx.stub.requests[before - 1].closedEarly)).resolves.toBe(true);
    expect((await tb.post(`/sandboxes/${id}/prompt`, { message: 'still there?' })).status).toBe(202);
    await coding.until((es) => es.some((e) => finalTurn(e) && e.event.message.stopReason === 'stop'), 'the next answer');
  });

  it('reports a repository that does not exist as repo_clone_error on the control stream', async () => {
    const id = await create({ repo: 'acme/no-such-repo' });
    const control = await open(id, 'control');
    const error = await control.untilType('repo_clone_error');
    expect(error.event.repo).toBe('acme/no-such-repo');
    expect(error.event.message).toMatch(/git clone failed/);
    const r = await tb.post(`/sandboxes/${id}/prompt`, { message: 'anything' });
    expect(r.status).toBe(409);
    expect(r.json.detail).toMatch(/failed to set up/);
  });

  it('resumes both streams by cursor (query or Last-Event-ID) with nothing lost and nothing twice', async () => {
    const id = await create({ repo: 'acme/demo-repo', prompt: 'Please read the readme again' });
    const whole = { control: await open(id, 'control'), coding: await open(id, 'coding') };
    const partial = { control: await open(id, 'control'), coding: await open(id, 'coding') };
    // Each partial reader leaves after a few events, mid-turn for the coding stream.
    await partial.control.until((es) => es.length >= 2, 'two control events');
    await partial.coding.until((es) => es.length >= 3, 'three coding events');
    await partial.control.close();
    await partial.coding.close();
    const seen = { control: partial.control.envelopes, coding: partial.coding.envelopes };
    await whole.coding.until((es) => es.some(finalTurn), 'the final turn');
    const lastControl = seen.control[seen.control.length - 1].cursor;
    const lastCoding = seen.coding[seen.coding.length - 1].cursor;
    const control = await open(id, 'control', `?cursor=${lastControl}`);
    const coding = await open(id, 'coding', '', { 'last-event-id': String(lastCoding) });
    await coding.until((es) => es.some(finalTurn), 'the final turn after resuming');
    await control.until((es) => es.length + seen.control.length >= whole.control.envelopes.length, 'the rest of control');
    for (const [name, resumed] of [['control', control], ['coding', coding]] as const) {
      const joined = [...seen[name], ...resumed.envelopes].slice(0, whole[name].envelopes.length);
      expect(consecutive(joined)).toBe(true);
      expect(joined).toEqual(whole[name].envelopes.slice(0, joined.length));
    }
  });

  it('deletes a sandbox: sandbox_terminated ends its streams, its container is removed, its id is 404', async () => {
    const id = await create({ repo: 'acme/demo-repo', prompt: 'hello' });
    const control = await open(id, 'control');
    const coding = await open(id, 'coding');
    await control.untilType('init_complete');
    // A sandbox of the broker's directory while it lives, which execd serves (a shell beside its daemon).
    expect(tb.broker.directory.find(id)).toMatchObject({ kind: 'task', capabilities: { shell: true } });
    expect((await tb.get(`/sandboxes/${id}/execd/ping`)).status).toBe(200);
    const r = await tb.request('DELETE', `/sandboxes/${id}`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).status).toBe('terminated');
    await control.finished();
    await coding.finished();
    expect(control.types().pop()).toBe('sandbox_terminated');
    expect((await fx.containers()).filter((c) => c.Labels['io.bash-broker.owner'] === id)).toEqual([]);
    expect((await tb.get(`/sandboxes/${id}`)).status).toBe(404);
    expect(tb.broker.directory.find(id)).toBeUndefined();
    expect((await tb.get(`/sandboxes/${id}/execd/ping`)).status).toBe(404);
  });
});

async function waitFor(probe: () => boolean, timeoutMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}
