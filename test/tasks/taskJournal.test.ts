/**
 * The per-stream journal of a task sandbox, its settings, and the checks of the task API's inputs.
 * @backend any
 */
import { taskStream, type TaskStream } from '../../src/core/tasks/taskSandbox';
import { ConfigError, loadConfig } from '../../src/config/config';
import { parseCreateTask, parseResumeCursor } from '../../src/api/tasks/taskInput';
import { BadRequestError } from '../../src/common/errors';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { scrubEnv, parseCapability } from '../../taskd/secrets';

const ev = (type: string) => ({ event: { type, timestamp: 1 } });
/** What the stream route sends after `cursor`. */
const read = (j: TaskStream, cursor: number) => j.slice(cursor + 1, Infinity);

describe("a task sandbox's stream", () => {
  it('numbers events 1, 2, 3 and reads what follows a cursor', () => {
    const j = taskStream(10);
    ['a', 'b', 'c'].forEach((t) => j.emit(ev(t)));
    expect(read(j, 0).events.map((e) => e.cursor)).toEqual([1, 2, 3]);
    expect(read(j, 2).events.map((e) => e.event.type)).toEqual(['c']);
    expect(read(j, 3).events).toEqual([]);
    expect(read(j, 99).events).toEqual([]);
    expect(j.last).toBe(3);
  });

  it('keeps the newest `capacity` and tells a reader further behind, continuing from the oldest kept', () => {
    const j = taskStream(3);
    for (let i = 0; i < 5; i++) j.emit(ev(`e${i + 1}`));
    const behind = read(j, 1);
    expect(behind.events.map((e) => e.cursor)).toEqual([3, 4, 5]);
    expect(behind.dropped).toEqual({ cursor: 2, event: { type: 'cursor_expired', timestamp: expect.any(Number), requested: 1, oldest: 3, detail: 'events 2 to 2 are no longer kept; continuing from 3' } });
    expect(JSON.stringify(behind.dropped).startsWith('{"cursor":2,"event":{"type":"cursor_expired","timestamp":')).toBe(true);
    expect(JSON.stringify(behind.events[0])).toBe('{"cursor":3,"event":{"type":"e3","timestamp":1}}');
    expect(read(j, 2).dropped).toBeNull();
    expect(read(j, 0).dropped?.event).toMatchObject({ requested: 0, oldest: 3, detail: 'events 1 to 2 are no longer kept; continuing from 3' });
  });

  it('wakes a waiting reader on append and on close, and takes nothing after close', async () => {
    const j = taskStream(3);
    const signal = new AbortController().signal;
    const woke = j.nextEvent(signal);
    j.emit(ev('x'));
    await woke;
    const ended = j.nextEvent(signal);
    j.close();
    await ended;
    expect(j.closed).toBe(true);
    expect(() => j.emit(ev('late'))).toThrow(/ended/);
  });
});

describe('task settings', () => {
  it('has defaults, and reads a directory or a server as the git base', () => {
    const c = loadConfig({}).tasks;
    expect(c).toMatchObject({ image: 'bash-broker-task:latest', gitBase: null, model: 'anthropic/claude-sonnet-4-5', networkMode: 'none', readyTimeoutMs: 60_000 });
    expect(loadConfig({}).tasks.keys.read()).toEqual({});
    expect(loadConfig({ BROKER_GIT_BASE_URL: '/srv/repos/' }).tasks.gitBase).toEqual({ kind: 'dir', path: '/srv/repos' });
    expect(loadConfig({ BROKER_GIT_BASE_URL: 'file:///srv/repos' }).tasks.gitBase).toEqual({ kind: 'dir', path: '/srv/repos' });
    expect(loadConfig({ BROKER_GIT_BASE_URL: 'https://git.example.com/' }).tasks.gitBase).toEqual({ kind: 'url', url: 'https://git.example.com' });
    expect(loadConfig({ ANTHROPIC_API_KEY: ' k1 ', OPENAI_API_KEY: '' }).tasks.keys.read()).toEqual({ ANTHROPIC_API_KEY: 'k1' });
  });

  it('reads the keys at each call, from the environment or a key file, and holds none in the configuration', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'task-keys-'));
    const file = path.join(dir, 'openai.key');
    fs.writeFileSync(file, 'sk-old\n');
    const env: Record<string, string> = { ANTHROPIC_API_KEY: 'sk-ant-1', OPENAI_API_KEY_FILE: file, OPENAI_API_KEY: 'ignored: the file wins' };
    const tasks = loadConfig(env).tasks;
    expect(JSON.stringify(tasks)).not.toMatch(/sk-/);
    expect(tasks.keys.read()).toEqual({ ANTHROPIC_API_KEY: 'sk-ant-1', OPENAI_API_KEY: 'sk-old' });
    env.ANTHROPIC_API_KEY = 'sk-ant-2';
    fs.writeFileSync(file, 'sk-new');
    expect(tasks.keys.read()).toEqual({ ANTHROPIC_API_KEY: 'sk-ant-2', OPENAI_API_KEY: 'sk-new' });
    fs.rmSync(file);
    expect(tasks.keys.read()).toEqual({ ANTHROPIC_API_KEY: 'sk-ant-2' });
    expect(() => loadConfig({ OPENAI_API_KEY_FILE: 'relative.key' })).toThrow(/absolute path/);
    fs.rmSync(dir, { recursive: true });
  });

  it("defaults the model to OpenAI's when only an OpenAI key is given, and keeps a model that is named", () => {
    expect(loadConfig({ OPENAI_API_KEY: 'k' }).tasks.model).toBe('openai/gpt-5.4');
    expect(loadConfig({ OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k' }).tasks.model).toBe('anthropic/claude-sonnet-4-5');
    expect(loadConfig({ OPENAI_API_KEY: 'k', BROKER_TASK_MODEL: 'anthropic/claude-haiku-4-5' }).tasks.model).toBe('anthropic/claude-haiku-4-5');
  });

  it.each([
    ['BROKER_GIT_BASE_URL', 'repos/here', /absolute directory or an http\(s\) URL/],
    ['BROKER_TASK_MODEL', 'claude', /'provider\/model-id'/],
    ['BROKER_ANTHROPIC_BASE_URL', 'ftp://x', /http\(s\) URL/],
    ['BROKER_TASK_READY_TIMEOUT', '-1', /positive number of seconds/],
    ['BROKER_TASK_SOCKET_DIR', 'rel', /absolute path/],
  ])('rejects %s=%s naming the variable', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });
});

describe('task API inputs', () => {
  it('takes {repo, name?, prompt?} and refuses the rest with a clear 400', () => {
    expect(parseCreateTask({ repo: 'acme/demo' })).toEqual({ repo: 'acme/demo' });
    expect(parseCreateTask({ repo: 'a/b', name: 'n', prompt: 'p' })).toEqual({ repo: 'a/b', name: 'n', prompt: 'p' });
    for (const bad of [null, [], 'x', {}, { repo: 'nope' }, { repo: 'a/b/c' }, { repo: '../b' }, { repo: 'a/..' }, { repo: 'a/b', prompt: '' }, { repo: 'a/b', extra: 1 }]) {
      expect(() => parseCreateTask(bad)).toThrow(BadRequestError);
    }
  });

  it('reads the resume cursor from the query first, then Last-Event-ID', () => {
    expect(parseResumeCursor(null, undefined)).toBe(0);
    expect(parseResumeCursor('7', '3')).toBe(7);
    expect(parseResumeCursor(null, '3')).toBe(3);
    expect(() => parseResumeCursor('-1', undefined)).toThrow(/integer >= 0/);
    expect(() => parseResumeCursor(null, 'abc')).toThrow(/integer >= 0/);
  });
});

describe('the daemon’s credential handling', () => {
  it('gives commands an environment without anything credential-like', () => {
    const env = scrubEnv({ PATH: '/bin', HOME: '/root', ANTHROPIC_API_KEY: 'k', GITHUB_TOKEN: 't', MY_SECRET: 's', TASKD_SOCKET: '/x' });
    expect(env).toEqual({ PATH: '/bin', HOME: '/root' });
  });

  it('takes a capability and never a key', () => {
    expect(parseCapability({ capability: 'taskcap-abc' })).toBe('taskcap-abc');
    expect(() => parseCapability({ ANTHROPIC_API_KEY: 'sk-ant-x' })).toThrow(/never a key/);
    expect(() => parseCapability({ capability: 'c', OPENAI_API_KEY: 'sk-x' })).toThrow(/never a key/);
    expect(() => parseCapability({ capability: 1 })).toThrow(/non-empty string/);
    expect(() => parseCapability([])).toThrow(/JSON object/);
  });
});
