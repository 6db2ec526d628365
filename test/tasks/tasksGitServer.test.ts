/**
 * BROKER_GIT_BASE_URL as a git server: the sandbox has no network, so its clone goes through Core's
 * relay. The server here is git's "dumb" HTTP protocol (static files of a bare repo after
 * `git update-server-info`), served by a plain node:http file server on the loopback.
 * @backend docker
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describeDocker } from '../helpers/dockerSuite';
import { lastUserText } from '../../devtools/stubLlm';
import { SseReader } from '../../devtools/taskStreams';
import { taskFixture, type TaskFixture } from '../helpers/taskSuite';
import type { TestBroker } from '../helpers/broker';

jest.setTimeout(240_000);

describeDocker('task sandboxes cloning from a git server (Docker)', () => {
  let fx: TaskFixture;
  let tb: TestBroker;
  let server: http.Server;
  const served: string[] = [];

  beforeAll(async () => {
    fx = await taskFixture('gitserver');
    fx.stub.reply = (req) => ({ text: [`re: ${lastUserText(req)}`] });
    execFileSync('git', ['update-server-info'], { cwd: path.join(fx.gitDir, 'acme/demo-repo.git') });
    server = http.createServer((req, res) => {
      const file = path.join(fx.gitDir, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
      served.push(req.url ?? '');
      if (!file.startsWith(fx.gitDir) || !fs.existsSync(file) || !fs.statSync(file).isFile()) return void res.writeHead(404).end();
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      fs.createReadStream(file).pipe(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    tb = await fx.startBroker({ BROKER_GIT_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` });
  });

  afterAll(async () => {
    await tb?.close();
    server?.close();
    await fx?.close();
  });

  it('clones through the relay, and a missing repo is a repo_clone_error', async () => {
    const ok = await tb.post('/sandboxes', { repo: 'acme/demo-repo', prompt: 'hi' });
    expect(ok.status).toBe(201);
    const control = await SseReader.open(`${tb.url}/sandboxes/${ok.json.id}/stream/control`);
    try {
      await control.untilType('init_complete');
      expect(served.some((u) => u.startsWith('/acme/demo-repo.git/info/refs'))).toBe(true);
    } finally {
      await control.close();
    }
    const missing = await tb.post('/sandboxes', { repo: 'acme/absent' });
    const errors = await SseReader.open(`${tb.url}/sandboxes/${missing.json.id}/stream/control`);
    try {
      expect((await errors.untilType('repo_clone_error')).event.message).toMatch(/git clone failed/);
    } finally {
      await errors.close();
    }
  });
});
