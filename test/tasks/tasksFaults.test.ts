/**
 * Task sandboxes when things go wrong: a daemon that never comes up (504, nothing left behind), and
 * a daemon killed mid-life (its container restarts it, Core reconnects, sends the credentials again,
 * and the conversation resumes from Pi's saved session). Idle streams get keep-alive comments.
 * @backend docker
 */
import fs from 'node:fs';
import Dockerode from 'dockerode';
import { describeDocker } from '../helpers/dockerSuite';
import { lastUserText } from '../../devtools/stubLlm';
import { SseReader } from '../../devtools/taskStreams';
import { SECRET_KEY, taskFixture, type TaskFixture } from '../helpers/taskSuite';
import { eventually, type TestBroker } from '../helpers/broker';
import { LABEL_DEPLOYMENT, LABEL_KIND, LABEL_OWNER } from '../../src/backends/docker/containers/labels';

jest.setTimeout(240_000);

describeDocker('task sandboxes: faults (Docker)', () => {
  let fx: TaskFixture;
  const brokers: TestBroker[] = [];
  const readers: SseReader[] = [];
  const docker = new Dockerode();

  beforeAll(async () => {
    fx = await taskFixture('faults');
    fx.stub.reply = (req) => ({ text: [`Noted: ${lastUserText(req)}`] });
  });

  afterAll(async () => {
    await Promise.all(readers.map((r) => r.close()));
    for (const b of brokers) await b.close();
    await fx?.close();
  });

  async function broker(extra: Record<string, string> = {}): Promise<TestBroker> {
    const tb = await fx.startBroker(extra);
    brokers.push(tb);
    return tb;
  }

  it('removes at start the task containers an earlier broker of its deployment left', async () => {
    // What a crashed broker leaves: a container with the task label of the deployment the next broker takes.
    const deployment = `${fx.deployment}-b-crashed`;
    const left = await docker.createContainer({ Image: 'bash-broker-test:latest', Cmd: ['sleep', '600'], HostConfig: { NetworkMode: 'none' }, Labels: { [LABEL_DEPLOYMENT]: deployment, [LABEL_KIND]: 'task' } });
    await left.start();
    await broker({ BROKER_DEPLOYMENT: deployment });
    await eventually(async () => !(await docker.listContainers({ all: true, filters: { id: [left.id] } })).length, 60_000, 'the left container removed');
  });

  it('answers 504 when the daemon never comes up, and removes the sandbox', async () => {
    // The pool's sandbox image has no daemon: its container idles, nothing ever listens.
    const tb = await broker({ BROKER_TASK_IMAGE: 'bash-broker-sandbox:latest', BROKER_TASK_READY_TIMEOUT: '3' });
    const r = await tb.post('/sandboxes', { repo: 'acme/demo-repo' });
    expect(r.status).toBe(504);
    expect(r.json.code).toBe('daemon_not_ready');
    expect(r.json.detail).toMatch(/did not become ready within 3 s .*the sandbox was removed/);
    expect(await fx.containers()).toEqual([]);
    expect(fs.readdirSync(fx.socketDir)).toEqual([]);
  });

  it('resumes the conversation after the daemon is killed: new instance, credentials again, same session', async () => {
    const tb = await broker({ BROKER_TASK_KEEPALIVE: '0.5' });
    const r = await tb.post('/sandboxes', { repo: 'acme/demo-repo', prompt: 'remember the word banana' });
    expect(r.status).toBe(201);
    const id = r.json.id as string;
    const control = await SseReader.open(`${tb.url}/sandboxes/${id}/stream/control`);
    const coding = await SseReader.open(`${tb.url}/sandboxes/${id}/stream/coding`);
    readers.push(control, coding);
    await coding.untilType('turn_end');
    // An idle stream is held open by keep-alive comments.
    await control.until(() => control.frames.some((f) => f.comment === 'keep-alive'), 'a keep-alive comment');

    const [info] = (await fx.containers()).filter((c) => c.Labels[LABEL_OWNER] === id);
    const container = docker.getContainer(info.Id);
    const exec = await container.exec({ Cmd: ['sh', '-c', 'kill -9 $(pgrep -f /opt/taskd/dist/taskd/main.js)'] });
    await exec.start({});
    await control.untilType('init_complete', (e) => e.event.resumed === true);
    expect(control.envelopes.some((e) => e.event.type === 'daemon_error' && /restarted/.test(e.event.message))).toBe(true);
    const requestsBefore = fx.stub.requests.length;
    expect((await tb.post(`/sandboxes/${id}/prompt`, { message: 'which word?' })).status).toBe(202);
    await coding.until((es) => es.filter((e) => e.event.type === 'turn_end').length >= 2, 'the answer after the restart');
    const after = fx.stub.requests[requestsBefore];
    // The restarted daemon has the key again, and the model sees the whole conversation.
    expect(after.headers['x-api-key']).toBe(SECRET_KEY);
    expect(JSON.stringify(after.body.messages)).toContain('remember the word banana');
    expect(lastUserText(after)).toBe('which word?');
    expect((await container.inspect()).RestartCount).toBe(1);

    // A broker that shuts down ends its sandboxes (sandbox_terminated) and removes their containers.
    await tb.close();
    brokers.splice(brokers.indexOf(tb), 1);
    await control.finished();
    expect(control.envelopes[control.envelopes.length - 1].event).toMatchObject({ type: 'sandbox_terminated', reason: 'broker shutting down' });
    expect(await fx.containers()).toEqual([]);
  });
});
