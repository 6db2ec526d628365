/**
 * OpenSandbox's execd API: execd code contexts of a pool session (`bash` always, `python` where the
 * sandbox has python3), on the exact wire format the OpenSandbox code interpreter SDK speaks (that
 * SDK is not installed here: its adapter POSTs `{code, context: {id, language}}` and reads SSE).
 * Docker runs python in the sandbox image (it has python3) and checks the test image's 400 (none).
 */
import { startTestBroker, testBackend, type TestBroker } from '../helpers/broker';
import { execdBase, meaningful, sse, startSse, textOf, type WireEvent } from '../helpers/execdClient';
import { eventually } from '../helpers/broker';

const pythonImage: Record<string, string> = testBackend === 'docker' ? { BROKER_IMAGE: 'bash-broker-sandbox:latest' } : {};

describe('execd code contexts', () => {
  let tb: TestBroker;
  let base: string;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', ...pythonImage });
    base = execdBase('', await tb.acquire());
  }, 180_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  const url = (p: string): string => tb.url + base + p;
  const createContext = async (language: string): Promise<string> => {
    const r = await tb.post(`${base}/code/context`, { language });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ id: expect.stringMatching(/^[0-9a-f]{32}$/), language });
    return r.json.id as string;
  };
  const run = async (code: string, context: Record<string, string>): Promise<WireEvent[]> => meaningful((await sse(url('/code'), { code, context })).events);

  it('keeps python variables across runs and answers the last expression as a result event', async () => {
    const id = await createContext('python');
    const first = await run('x = 6\nprint("x is", x)\nprint("second line")', { id, language: 'python' });
    expect(first.map((e) => e.type)).toEqual(['init', 'stdout', 'stdout', 'execution_count', 'execution_complete']);
    expect(first[0].text).toBe(id);
    expect(textOf(first, 'stdout')).toBe('x is 6\nsecond line\n');
    const second = await run('y = x * 7\ny', { id, language: 'python' });
    expect(second.find((e) => e.type === 'result')).toEqual({ type: 'result', results: { 'text/plain': '42' }, timestamp: expect.any(Number) });
    expect(second.find((e) => e.type === 'execution_count')?.execution_count).toBe(2);
    expect(second[second.length - 1].type).toBe('execution_complete');
  });

  it('answers an exception as the error event with its traceback, and the interpreter lives on', async () => {
    const id = await createContext('python');
    const events = await run('import sys\nprint("before", file=sys.stderr)\nundefined_var', { id });
    expect(textOf(events, 'stderr')).toBe('before\n');
    const error = events[events.length - 1];
    expect(error.type).toBe('error');
    expect(error.error).toEqual({
      ename: 'NameError',
      evalue: "name 'undefined_var' is not defined",
      traceback: ['Traceback (most recent call last):', '  File "<stdin>", line 3, in <module>', "NameError: name 'undefined_var' is not defined"],
    });
    expect((await run('if', { id })).pop()?.error).toMatchObject({ ename: 'SyntaxError' });
    expect((await run('1 + 1', { id })).find((e) => e.type === 'result')?.results).toEqual({ 'text/plain': '2' });
  });

  it('interrupts running python code with KeyboardInterrupt (DELETE /code?id=) and keeps its state', async () => {
    const id = await createContext('python');
    await run('kept = "still here"', { id });
    const running = await startSse(url('/code'), { code: 'import time\nwhile True:\n    time.sleep(0.05)', context: { id } });
    await eventually(() => running.events.some((e) => e.type === 'init'), 20_000, 'the init event');
    const busy = await tb.post(`${base}/code`, { code: '1', context: { id } });
    expect(busy.status).toBe(409);
    expect((await tb.request('DELETE', `${base}/code?id=${id}`)).status).toBe(200);
    await running.done;
    expect(meaningful(running.events).pop()?.error).toMatchObject({ ename: 'KeyboardInterrupt' });
    expect((await run('kept', { id })).find((e) => e.type === 'result')?.results).toEqual({ 'text/plain': "'still here'" });
  });

  it('runs bash contexts with their state, a default context per language, and contextless code as a command', async () => {
    const id = await createContext('bash');
    await run('cd /tmp && COUNT=41', { id, language: 'bash' });
    const events = await run('echo "$PWD $((COUNT + 1))"', { id });
    expect(events.filter((e) => e.type === 'stdout').map((e) => e.text)).toEqual(['/tmp 42\n']);
    expect((await run('exit 7', { id })).pop()).toMatchObject({ type: 'error', error: { ename: 'CommandExecError', evalue: '7' } });
    await run('DEFAULT_CTX=yes', { language: 'bash' });
    expect(textOf(await run('echo $DEFAULT_CTX', { language: 'bash' }), 'stdout')).toBe('yes\n');
    const contextless = meaningful((await sse(url('/code'), { code: 'echo shell' })).events);
    expect(textOf(contextless, 'stdout')).toBe('shell');
  });

  it('lists, gets and deletes contexts', async () => {
    const id = await createContext('bash');
    const listed = await tb.get(`${base}/code/contexts?language=bash`);
    expect(listed.json).toEqual(expect.arrayContaining([{ id, language: 'bash' }]));
    expect((listed.json as WireEvent[]).every((c) => c.language === 'bash')).toBe(true);
    expect((await tb.get(`${base}/code/contexts/${id}`)).json).toEqual({ id, language: 'bash' });
    expect((await tb.request('DELETE', `${base}/code/contexts/${id}`)).status).toBe(200);
    const gone = await tb.get(`${base}/code/contexts/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual({ code: 'NOT_FOUND', message: `Code context not found: ${id}` });
    expect((await tb.post(`${base}/code`, { code: '1', context: { id } })).status).toBe(404);
    await createContext('bash');
    expect((await tb.request('DELETE', `${base}/code/contexts?language=bash`)).status).toBe(200);
    expect((await tb.get(`${base}/code/contexts?language=bash`)).json).toEqual([]);
  });

  it('refuses another language with 400 naming the supported ones, and bad bodies with 400', async () => {
    const java = await tb.post(`${base}/code/context`, { language: 'java' });
    expect(java.status).toBe(400);
    expect(java.json).toEqual({ code: 'INVALID_REQUEST_BODY', message: 'language "java" is not supported; supported: bash, python (where the sandbox has python3)' });
    expect((await tb.post(`${base}/code`, { code: '1', context: { language: 'ruby' } })).status).toBe(400);
    expect((await tb.post(`${base}/code`, { context: { language: 'bash' } })).json).toEqual({ code: 'INVALID_REQUEST_BODY', message: "'code' is required" });
    expect((await tb.post(`${base}/code/context`, [])).status).toBe(400);
    expect((await tb.request('DELETE', `${base}/code`)).status).toBe(400);
    expect((await tb.request('DELETE', `${base}/code?id=${'a'.repeat(32)}`)).status).toBe(404);
  });
});

if (testBackend === 'docker') {
  describe('execd code contexts where the sandbox has no python3', () => {
    let tb: TestBroker;
    beforeAll(async () => {
      tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1' });
    }, 120_000);
    afterAll(async () => {
      await tb?.close();
    }, 60_000);

    it('answers a python context with 400 naming bash', async () => {
      const base = execdBase('', await tb.acquire());
      const r = await tb.post(`${base}/code/context`, { language: 'python' });
      expect(r.status).toBe(400);
      expect(r.json).toEqual({ code: 'NOT_SUPPORTED', message: 'python is not available in this sandbox (no python3 on its PATH); supported here: bash' });
      expect((await tb.post(`${base}/code/context`, { language: 'bash' })).status).toBe(200);
    });
  });
}
