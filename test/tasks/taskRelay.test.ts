/**
 * The task relay on its own (a real unix socket, a real upstream on port 0): it takes model calls
 * only with its sandbox's capability, swaps that for the provider's key as read at each call, and
 * streams the answer through as it comes.
 * @backend local
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { ANTHROPIC_KEY, OPENAI_KEY, TaskRelay } from '../../src/backends/docker/tasks/taskRelay';
import type { TaskCredentials } from '../../src/config/taskConfig';
import { captureLog, type LogCapture } from '../helpers/logCapture';

const CAP = 'taskcap-this-sandbox';

interface Seen {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe('the task relay', () => {
  const seen: Seen[] = [];
  /** The upstream's SSE answer: the first frame at once, the second when the test releases it. */
  let release: () => void = () => undefined;
  let upstream: http.Server;
  let dir: string;
  const keys: TaskCredentials = { ANTHROPIC_API_KEY: 'sk-ant-one', OPENAI_API_KEY: 'sk-openai-one' };
  const relays: TaskRelay[] = [];

  // The refusals' warnings are kept (and looked at below), not printed.
  let log: LogCapture;
  beforeAll(async () => {
    log = captureLog();
    upstream = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', headers: req.headers, body });
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write('event: one\ndata: {"n":1}\n\n');
        const held = new Promise<void>((r) => (release = r));
        void held.then(() => res.end('event: two\ndata: {"n":2}\n\n'));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'task-relay-'));
  });

  afterAll(async () => {
    log.stop();
    await Promise.all(relays.map((r) => r.close()));
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function relay(name: string): Promise<string> {
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const r = new TaskRelay('task-1', { '/anthropic': { base, key: ANTHROPIC_KEY }, '/openai': { base: `${base}/v1`, key: OPENAI_KEY }, '/git': { base: `${base}/git` } }, CAP, { read: () => ({ ...keys }) });
    relays.push(r);
    const socket = path.join(dir, `${name}.sock`);
    await r.listen(socket);
    return socket;
  }

  /** A POST over the socket; resolves at the answer's head, its body read chunk by chunk. */
  function post(socketPath: string, urlPath: string, headers: Record<string, string>): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = http.request({ socketPath, path: urlPath, method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, resolve);
      req.on('error', reject);
      req.end('{"stream":true}');
    });
  }

  async function text(res: http.IncomingMessage): Promise<string> {
    let out = '';
    for await (const c of res) out += (c as Buffer).toString('utf8');
    return out;
  }

  it("swaps the capability for Anthropic's key in x-api-key, and streams the answer frame by frame", async () => {
    const socket = await relay('a');
    const res = await post(socket, '/anthropic/v1/messages', { 'x-api-key': CAP });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    // The first frame arrives while the upstream still holds the second: nothing is buffered.
    const first = await new Promise<string>((r) => res.once('data', (c: Buffer) => r(c.toString('utf8'))));
    expect(first).toBe('event: one\ndata: {"n":1}\n\n');
    release();
    expect(await text(res)).toBe('event: two\ndata: {"n":2}\n\n');
    const got = seen[seen.length - 1];
    expect(got.url).toBe('/v1/messages');
    expect(got.headers['x-api-key']).toBe('sk-ant-one');
    expect(got.headers.authorization).toBeUndefined();
    expect(got.body).toBe('{"stream":true}');
  });

  it("swaps it for OpenAI's key as a Bearer, and uses a rotated key from the next call on", async () => {
    const socket = await relay('o');
    const call = async (): Promise<Seen> => {
      const res = await post(socket, '/openai/responses', { authorization: `Bearer ${CAP}` });
      release();
      await text(res);
      expect(res.statusCode).toBe(200);
      return seen[seen.length - 1];
    };
    const before = await call();
    expect([before.url, before.headers.authorization, before.headers['x-api-key']]).toEqual(['/v1/responses', 'Bearer sk-openai-one', undefined]);
    keys.OPENAI_API_KEY = 'sk-openai-two';
    expect((await call()).headers.authorization).toBe('Bearer sk-openai-two');
  });

  it('refuses a model call without the capability, with another, or with no key to attach, and forwards none', async () => {
    const socket = await relay('r');
    const count = seen.length;
    for (const headers of [{} as Record<string, string>, { 'x-api-key': 'taskcap-another-sandbox' }, { authorization: 'Bearer sk-ant-one' }, { 'x-api-key': `${CAP}x` }]) {
      const res = await post(socket, '/anthropic/v1/messages', headers);
      expect([headers, res.statusCode, JSON.parse(await text(res))]).toEqual([headers, 401, { detail: "the relay takes model calls only with this sandbox's capability" }]);
    }
    delete keys.ANTHROPIC_API_KEY;
    const res = await post(socket, '/anthropic/v1/messages', { 'x-api-key': CAP });
    expect([res.statusCode, JSON.parse(await text(res))]).toEqual([401, { detail: 'the broker holds no ANTHROPIC_API_KEY' }]);
    keys.ANTHROPIC_API_KEY = 'sk-ant-one';
    expect(seen.length).toBe(count);
    // Each refusal is logged for the operator, with its reason and never the header that was sent.
    const refusals = log.lines.filter((l) => l.includes('task relay: call refused')).map((l) => JSON.parse(l) as { task: string; status: number; route: string });
    expect(refusals.slice(-5).map((l) => [l.task, l.route, l.status])).toEqual(Array(5).fill(['task-1', '/anthropic', 401]));
    expect(log.lines.some((l) => l.includes('sk-ant-one') || l.includes(CAP))).toBe(false);
    // The git route takes no key and gets none.
    const git = await post(socket, '/git/acme/demo.git/git-upload-pack', {});
    release();
    await text(git);
    expect(seen[seen.length - 1]).toMatchObject({ url: '/git/acme/demo.git/git-upload-pack' });
    expect(seen[seen.length - 1].headers['x-api-key']).toBeUndefined();
  });
});
