/**
 * No model key enters a task sandbox, tried as an attacker would (Docker, the task image, the real
 * daemon and Pi), for Anthropic and for OpenAI: the model's own bash tool runs a scan of every other
 * process's memory, every environment and command line, and every file of the sandbox, for the key
 * the broker holds. It is found nowhere, nor in `docker inspect` of the container, its log or the
 * events. The stub LLM still received it, in the provider's header: the relay swapped the sandbox's
 * capability for it. A call to the relay without the capability is refused and reaches nothing; a
 * key rotated in the broker's key file is what the next call carries, the container untouched.
 *
 * The scan proves it can see: a marker sent in the prompt (which the daemon holds, and Pi's session
 * file) is found, in the daemon's memory and in that file, by the same scan.
 * @backend docker
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Dockerode from 'dockerode';
import { describeDocker } from '../helpers/dockerSuite';
import { keyScanCommand, parseKeyScan, type KeyScan } from '../helpers/keyScan';
import { endsWithToolResult, lastUserText, type RecordedRequest } from '../../devtools/stubLlm';
import { SseReader, type StreamEnvelope } from '../../devtools/taskStreams';
import { execIn, taskFixture, type TaskFixture } from '../helpers/taskSuite';
import type { TestBroker } from '../helpers/broker';
import { captureLog, type LogCapture } from '../helpers/logCapture';

jest.setTimeout(600_000);

const PROVIDERS = [
  { provider: 'anthropic', keyName: 'ANTHROPIC_API_KEY', prefix: 'sk-ant-api03', header: (key: string) => ({ 'x-api-key': key, authorization: undefined }) },
  { provider: 'openai', keyName: 'OPENAI_API_KEY', prefix: 'sk-proj', header: (key: string) => ({ authorization: `Bearer ${key}`, 'x-api-key': undefined }) },
] as const;

const finalTurn = (es: StreamEnvelope[], n: number): boolean => es.filter((e) => e.event.type === 'turn_end' && e.event.message?.stopReason !== 'toolUse').length >= n;

for (const { provider, keyName, prefix, header } of PROVIDERS) describeDocker(`a ${provider} key never enters a task sandbox (Docker)`, () => {
  const docker = new Dockerode();
  const key = `${prefix}-${randomBytes(24).toString('hex')}`;
  const rotated = `${prefix}-${randomBytes(24).toString('hex')}`;
  const marker = `scan-marker-${randomBytes(12).toString('hex')}`;
  let fx: TaskFixture;
  let tb: TestBroker;
  let keyDir: string;
  let keyFile: string;
  const readers: SseReader[] = [];
  let log: LogCapture;

  beforeAll(async () => {
    fx = await taskFixture(`keys-${provider}`);
    keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'task-keys-'));
    keyFile = path.join(keyDir, 'key');
    fs.writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
    // The key only in a file the broker reads at each call; no model named, so it follows the key.
    // Everything the broker logs, down to trace, is kept and searched for the key below.
    log = captureLog();
    tb = await fx.startBroker({
      BROKER_LOG_LEVEL: 'trace',
      ANTHROPIC_API_KEY: '',
      OPENAI_API_KEY: '',
      [`${keyName}_FILE`]: keyFile,
      BROKER_TASK_MODEL: '',
      BROKER_OPENAI_BASE_URL: `${fx.stub.url}/v1`,
    });
    fx.stub.reply = (req) => {
      const text = lastUserText(req);
      if (endsWithToolResult(req)) return { text: ['Scanned.'] };
      if (text.includes(marker)) return { text: ['Scanning.'], toolCalls: [{ name: 'bash', input: { command: keyScanCommand({ key, marker }) } }] };
      return { text: [`You said: ${text}`] };
    };
  });

  afterAll(async () => {
    await Promise.all(readers.map((r) => r.close()));
    await tb?.close();
    await fx?.close();
    log?.stop();
    fs.rmSync(keyDir, { recursive: true, force: true });
  });

  it('is found in no process memory, environment, file, inspect, log or event; the model got it from the relay; a rotated key is used next', async () => {
    const r = await tb.post('/sandboxes', { repo: 'acme/demo-repo', prompt: `Look for secrets (${marker})` });
    expect(r.status).toBe(201);
    const id = r.json.id as string;
    const control = await SseReader.open(`${tb.url}/sandboxes/${id}/stream/control`);
    const coding = await SseReader.open(`${tb.url}/sandboxes/${id}/stream/coding`);
    readers.push(control, coding);
    await coding.until((es) => finalTurn(es, 1), 'the scan turn', 300_000);

    const toolEnd = coding.envelopes.find((e) => e.event.type === 'tool_execution_end')!.event;
    expect(toolEnd).toMatchObject({ toolName: 'bash', isError: false });
    const scan: KeyScan = parseKeyScan((toolEnd.result.content as Array<{ text?: string }>).map((c) => c.text ?? '').join(''));
    // It saw every other process (the container's init and the daemon: the agent's bash execs the
    // scanner), their memory (the daemon's heap alone is tens of MB), environments, and the files.
    expect(scan.processes).toBeGreaterThanOrEqual(2);
    expect(scan.environs).toBeGreaterThanOrEqual(2);
    expect(scan.memoryBytes).toBeGreaterThan(50 * 1024 * 1024);
    expect(scan.files).toBeGreaterThan(1000);
    expect(scan.hits.marker.some((w) => /^mem:\d+:node$/.test(w))).toBe(true);
    expect(scan.hits.marker.some((w) => w.startsWith('file:/root/.pi/agent/sessions/'))).toBe(true);
    // ... and the key is nowhere.
    expect(scan.hits.key).toEqual([]);

    const [info] = (await fx.containers()).filter((c) => c.Labels['io.bash-broker.kind'] === 'task' && c.Labels['io.bash-broker.owner'] === id);
    const container = docker.getContainer(info.Id);
    const inspectBefore = await container.inspect();
    const logs = (await container.logs({ stdout: true, stderr: true })).toString('utf8');
    // The broker's own log at trace level: its relay logged both model calls (so the search sees
    // the path a key takes), and holds no key.
    const relayed = (msg: string): number => log.lines.filter((l) => l.includes(msg) && l.includes(id)).length;
    expect(relayed('task relay: call answered')).toBe(2);
    for (const [where, text] of Object.entries({ brokerLog: log.lines.join(''), inspect: JSON.stringify(inspectBefore), logs, control: JSON.stringify(control.envelopes), coding: JSON.stringify(coding.envelopes) })) {
      expect([where, text.includes(key)]).toEqual([where, false]);
    }

    // The model was called with the key, in its provider's header and no other credential: the
    // relay put it there, in place of the capability the daemon sent.
    const calls = (): RecordedRequest[] => fx.stub.requests.filter((q) => q.api === provider);
    expect(calls().length).toBe(2);
    for (const q of calls()) expect({ 'x-api-key': q.headers['x-api-key'], authorization: q.headers.authorization }).toEqual(header(key));

    // From inside, a model call without the capability (or with a guess, or with the key itself
    // were it known) is refused by the relay and goes nowhere.
    const before = fx.stub.requests.length;
    const statuses = await execIn(container, ['node', '-e', RELAY_PROBE, provider === 'anthropic' ? '/anthropic/v1/messages' : '/openai/v1/responses', key]);
    expect(statuses.trim()).toBe('401 401 401');
    expect(fx.stub.requests.length).toBe(before);
    expect(relayed('task relay: call refused')).toBe(3);

    // Rotated in the broker's key file: the next call carries the new key, the sandbox untouched.
    fs.writeFileSync(keyFile, `${rotated}\n`);
    expect((await tb.post(`/sandboxes/${id}/prompt`, { message: 'after the rotation' })).status).toBe(202);
    await coding.until((es) => finalTurn(es, 2), 'the turn after the rotation', 120_000);
    const last = calls()[calls().length - 1];
    expect(lastUserText(last)).toBe('after the rotation');
    expect({ 'x-api-key': last.headers['x-api-key'], authorization: last.headers.authorization }).toEqual(header(rotated));
    const inspectAfter = await container.inspect();
    expect([inspectAfter.State.StartedAt, inspectAfter.RestartCount]).toEqual([inspectBefore.State.StartedAt, inspectBefore.RestartCount]);
    expect(JSON.stringify(inspectAfter).includes(rotated)).toBe(false);
    expect([log.lines.some((l) => l.includes(key)), log.lines.some((l) => l.includes(rotated))]).toEqual([false, false]);
  });
});

/** Three model calls on the relay's socket: no credential, a guessed capability, the key; prints the statuses. */
const RELAY_PROBE = String.raw`
const http = require('http');
const [route, key] = process.argv.slice(1);
const call = (headers) => new Promise((resolve) => {
  const req = http.request({ socketPath: '/run/taskd/relay.sock', path: route, method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => { res.resume(); resolve(res.statusCode); });
  req.on('error', (e) => resolve('error:' + e.message));
  req.end('{}');
});
(async () => {
  const out = [await call({}), await call({ 'x-api-key': 'taskcap-guess', authorization: 'Bearer taskcap-guess' }), await call({ 'x-api-key': key, authorization: 'Bearer ' + key })];
  console.log(out.join(' '));
})();
`;
