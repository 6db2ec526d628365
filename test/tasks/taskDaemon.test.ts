/**
 * The task daemon as a process of its own (no container): its API on a unix socket, the real Pi
 * agent against the stub LLM, a bare repo on disk. Prompts that come before the workspace is ready
 * are held and fired after it in order; /init is taken once; the event journal replays after a seq;
 * a restarted daemon reopens the saved session.
 * @backend local
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UnixDaemonLink } from '../../src/backends/docker/tasks/taskDaemonLink';
import { DaemonCallError, type DaemonEnvelope } from '../../src/core/ports/taskPorts';
import { StubLlm, lastUserText } from '../../devtools/stubLlm';
import { makeBareRepo } from '../../devtools/taskStreams';

jest.setTimeout(120_000);
const ROOT = path.resolve(__dirname, '../..');

describe('the task daemon', () => {
  const stub = new StubLlm();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskd-test-'));
  const socket = path.join(dir, 'daemon.sock');
  const link = new UnixDaemonLink(socket);
  let daemon: ChildProcess | null = null;

  async function start(): Promise<void> {
    daemon = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'taskd/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: path.join(dir, 'home'), TASKD_SOCKET: socket, TASKD_ANTHROPIC_BASE_URL: stub.url },
      stdio: 'ignore',
    });
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await link.health(AbortSignal.timeout(2000));
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async function stop(): Promise<void> {
    if (!daemon || daemon.exitCode !== null) return;
    const exited = new Promise((r) => daemon!.once('exit', r));
    daemon.kill('SIGKILL');
    await exited;
  }

  /** Events after `after` until `done` holds of them. */
  async function events(after: number, done: (es: DaemonEnvelope[]) => boolean): Promise<DaemonEnvelope[]> {
    const got: DaemonEnvelope[] = [];
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 60_000);
    try {
      for await (const e of link.events(after, controller.signal)) {
        got.push(e);
        if (done(got)) break;
      }
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
    if (!done(got)) throw new Error(`events ended early: ${got.map((e) => e.event.type).join(', ')}`);
    return got;
  }

  beforeAll(async () => {
    await stub.start();
    stub.reply = (req) => ({ text: [`re: ${lastUserText(req)}`] });
    makeBareRepo(path.join(dir, 'git'), 'acme/demo', { 'README.md': 'demo\n' });
    await start();
  });

  afterAll(async () => {
    await stop();
    await stub.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a bad /init, and a key or anything but a capability on /credentials, with 400', async () => {
    await expect(link.post('/init', { repo: '../x', prompt: 'p', model: 'anthropic/claude-sonnet-4-5', clone: { path: '/x' } })).rejects.toMatchObject({ status: 400 });
    await expect(link.post('/init', { repo: 'a/b', prompt: 'p', model: 'anthropic/claude-sonnet-4-5' })).rejects.toMatchObject({ status: 400, detail: expect.stringMatching(/'clone'/) });
    await expect(link.post('/credentials', { GITHUB_TOKEN: 'x' })).rejects.toBeInstanceOf(DaemonCallError);
    await expect(link.post('/credentials', { ANTHROPIC_API_KEY: 'sk-ant-x' })).rejects.toMatchObject({ status: 400, detail: expect.stringMatching(/never a key/) });
    await expect(link.post('/credentials', { capability: '' })).rejects.toMatchObject({ status: 400 });
  });

  it('holds prompts sent before the clone and fires them after init_complete, in order', async () => {
    await link.post('/credentials', { capability: 'k-local' });
    await link.post('/init', { repo: 'acme/demo', prompt: 'first', model: 'anthropic/claude-sonnet-4-5', clone: { path: path.join(dir, 'git/acme/demo.git') } });
    expect(await link.post('/prompt', { message: 'second' })).toEqual({ queued: true, held: true });
    await expect(link.post('/init', { repo: 'acme/demo', prompt: 'again', model: 'anthropic/claude-sonnet-4-5', clone: { path: '/x' } })).rejects.toMatchObject({ status: 409 });
    const got = await events(0, (es) => es.filter((e) => e.event.type === 'turn_end').length >= 2);
    const control = got.filter((e) => ['repo_cloned', 'init_complete', 'prompt_queued'].includes(e.event.type)).map((e) => [e.event.type, e.event.message ?? null]);
    expect(control).toEqual([
      ['repo_cloned', null],
      ['init_complete', null],
      ['prompt_queued', 'first'],
      ['prompt_queued', 'second'],
    ]);
    expect(got.map((e) => e.seq)).toEqual(got.map((_, i) => i + 1));
    expect(stub.requests.map(lastUserText)).toEqual(['first', 'second']);
    // A replay after a seq starts right after it.
    const replay = await events(3, (es) => es.length >= 2);
    expect(replay.map((e) => e.seq)).toEqual([4, 5]);
  });

  it('reopens the saved session when restarted: the model sees the earlier conversation', async () => {
    const pointer = JSON.parse(fs.readFileSync(path.join(dir, 'home/.wuhu/pi-session.json'), 'utf8'));
    expect(pointer.sessionFile).toContain(path.join(dir, 'home/.pi/agent/sessions'));
    await stop();
    await start();
    const [resumed] = await events(0, (es) => es.length >= 1);
    expect(resumed.event).toMatchObject({ type: 'init_complete', resumed: true });
    await link.post('/credentials', { capability: 'k-local' });
    await link.post('/prompt', { message: 'third' });
    await events(1, (es) => es.some((e) => e.event.type === 'turn_end'));
    const last = stub.requests[stub.requests.length - 1];
    expect(last.body.messages.filter((m) => m.role === 'user').length).toBe(3);
    expect(last.headers['x-api-key']).toBe('k-local');
  });
});
