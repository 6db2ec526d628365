/**
 * A task sandbox on OpenAI (Docker): the broker holds only an OpenAI key and names no model, so
 * the agent runs on Pi's OpenAI model, whose calls go through the relay's /openai route as OpenAI
 * Responses API streams (the stub LLM speaks that format, tool calls included).
 * @backend docker
 */
import { describeDocker } from '../helpers/dockerSuite';
import { endsWithToolResult, lastUserText } from '../../devtools/stubLlm';
import { SseReader, consecutive } from '../../devtools/taskStreams';
import { README, taskFixture, type TaskFixture } from '../helpers/taskSuite';
import type { TestBroker } from '../helpers/broker';

jest.setTimeout(240_000);

const OPENAI_KEY = `sk-proj-test-${process.pid}-0a1b2c3d4e5f-never-leak`;

describeDocker('task sandboxes on OpenAI (Docker)', () => {
  let fx: TaskFixture;
  let tb: TestBroker;
  const readers: SseReader[] = [];

  beforeAll(async () => {
    fx = await taskFixture('openai');
    // Only OpenAI's key and endpoint; no model named, so the default follows the key.
    tb = await fx.startBroker({ ANTHROPIC_API_KEY: '', BROKER_TASK_MODEL: '', OPENAI_API_KEY: OPENAI_KEY, BROKER_OPENAI_BASE_URL: `${fx.stub.url}/v1` });
    fx.stub.reply = (req) => {
      if (endsWithToolResult(req)) return { text: ['The README says: ', lastUserText(req).trim()] };
      return { text: ['Let me look.'], toolCalls: [{ name: 'bash', input: { command: 'cat README.md' } }] };
    };
  });

  afterAll(async () => {
    await Promise.all(readers.map((r) => r.close()));
    await tb?.close();
    await fx?.close();
  });

  async function open(id: string, stream: 'control' | 'coding'): Promise<SseReader> {
    const reader = await SseReader.open(`${tb.url}/sandboxes/${id}/stream/${stream}`);
    readers.push(reader);
    expect(reader.status).toBe(200);
    return reader;
  }

  it('runs bash on the repo through a streamed function call and answers, every event in order, the key in none', async () => {
    const r = await tb.post('/sandboxes', { repo: 'acme/demo-repo', prompt: 'Please read the readme' });
    expect(r.status).toBe(201);
    const id = r.json.id as string;
    const control = await open(id, 'control');
    const coding = await open(id, 'coding');
    await coding.until((es) => es.some((e) => e.event.type === 'turn_end' && e.event.message?.stopReason !== 'toolUse'), 'the final turn_end');
    await control.untilType('init_complete');

    const types = coding.types();
    const order = ['turn_start', 'message_update', 'message_end', 'tool_execution_start', 'tool_execution_end', 'turn_end', 'turn_start', 'message_update', 'message_end', 'turn_end'];
    let at = -1;
    for (const type of order) {
      at = types.indexOf(type, at + 1);
      expect([type, at >= 0]).toEqual([type, true]);
    }
    // The arguments arrived in pieces (toolcall_delta) and were put back together.
    const deltas = coding.envelopes.filter((e) => e.event.type === 'message_update').map((e) => e.event.assistantMessageEvent.type);
    expect(deltas).toEqual(expect.arrayContaining(['text_delta', 'toolcall_start', 'toolcall_delta', 'toolcall_end']));
    const start = coding.envelopes.find((e) => e.event.type === 'tool_execution_start')!.event;
    expect(start).toMatchObject({ toolName: 'bash', args: { command: 'cat README.md' } });
    const toolEnd = coding.envelopes.find((e) => e.event.type === 'tool_execution_end')!.event;
    expect(toolEnd).toMatchObject({ toolName: 'bash', isError: false });
    expect(JSON.stringify(toolEnd.result)).toContain('demo-repo: it prints the answer 42');
    const assistant = coding.envelopes.filter((e) => e.event.type === 'message_end' && e.event.message.role === 'assistant').map((e) => e.event.message);
    expect(assistant.map((m) => [m.provider, m.model, m.stopReason])).toEqual([
      ['openai', 'gpt-5.4', 'toolUse'],
      ['openai', 'gpt-5.4', 'stop'],
    ]);
    expect(assistant[1].content[0].text).toBe(`The README says: ${README.trim()}`);
    expect(consecutive(coding.envelopes)).toBe(true);

    // Both calls were OpenAI Responses streams through the relay, with the broker's key; the
    // second carried the bash output back as the function call's output.
    expect(fx.stub.requests.map((q) => [q.api, q.path, q.body.model, q.body.stream])).toEqual([
      ['openai', '/v1/responses', 'gpt-5.4', true],
      ['openai', '/v1/responses', 'gpt-5.4', true],
    ]);
    expect(fx.stub.requests.every((q) => q.headers.authorization === `Bearer ${OPENAI_KEY}`)).toBe(true);
    expect(fx.stub.requests[0].body.tools?.map((t) => t.name)).toContain('bash');
    const output = fx.stub.requests[1].body.input?.find((item) => item.type === 'function_call_output');
    expect(output?.call_id).toBe('call_1_1');
    // The key is in no event of either stream.
    for (const reader of [control, coding]) expect(JSON.stringify(reader.envelopes).includes(OPENAI_KEY)).toBe(false);
  });
});
