/**
 * Fault on the task API: a task's daemon killed mid-turn (the model's answer still streaming). The
 * model call in flight is cut, the control stream says what happened (the stream lost, the daemon
 * restarted, the turn cut) and the daemon comes back with its session; the next prompt is answered
 * with the whole conversation, and a new sandbox works. Idle-time kills are tasksFaults.test.ts's.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { describeDocker } from '../helpers/dockerSuite';
import { lastUserText } from '../../devtools/stubLlm';
import { SseReader, type StreamEnvelope } from '../../devtools/taskStreams';
import { taskFixture, type TaskFixture } from '../helpers/taskSuite';
import { eventually, type TestBroker } from '../helpers/broker';
import { LABEL_OWNER } from '../../src/backends/docker/containers/labels';

jest.setTimeout(300_000);
const LONG = 90_000;

describeDocker('task sandboxes: the daemon killed mid-turn (Docker)', () => {
  let fx: TaskFixture;
  let tb: TestBroker | null = null;
  const readers: SseReader[] = [];
  const docker = new Dockerode();
  let release: () => void = () => undefined;

  beforeAll(async () => {
    fx = await taskFixture('ff-task');
    fx.stub.reply = (req) => {
      const text = lastUserText(req);
      if (text.includes('a long answer')) return { text: ['Working on it', ' and never done.'], hold: new Promise<void>((r) => (release = r)) };
      return { text: [`Noted: ${text}`] };
    };
  });

  afterAll(async () => {
    release();
    await Promise.all(readers.map((r) => r.close()));
    await tb?.close();
    await fx?.close();
  });

  async function open(id: string, stream: 'control' | 'coding'): Promise<SseReader> {
    const reader = await SseReader.open(`${tb!.url}/sandboxes/${id}/stream/${stream}`);
    readers.push(reader);
    expect(reader.status).toBe(200);
    return reader;
  }

  const finalAnswer = (e: StreamEnvelope): boolean => e.event.type === 'turn_end' && e.event.message?.stopReason === 'stop';

  it('cuts the model call, says so on the control stream, resumes the session, and answers the next prompt', async () => {
    tb = await fx.startBroker({ BROKER_TASK_KEEPALIVE: '0.5' });
    const r = await tb.post('/sandboxes', { repo: 'acme/demo-repo', prompt: 'remember the word banana' });
    expect(r.status).toBe(201);
    const id = r.json.id as string;
    const control = await open(id, 'control');
    const coding = await open(id, 'coding');
    await coding.until((es) => es.some(finalAnswer), 'the first answer');

    expect((await tb.post(`/sandboxes/${id}/prompt`, { message: 'now a long answer' })).status).toBe(202);
    await eventually(() => fx.stub.requests.some((q) => lastUserText(q) === 'now a long answer'), LONG, 'the long answer asked of the model');
    const inFlight = fx.stub.requests.find((q) => lastUserText(q) === 'now a long answer')!;
    // Streaming: a message_update in the second turn (the first prompt's answer took one).
    const streamingSecondTurn = (es: StreamEnvelope[]): boolean => {
      const starts = es.flatMap((e, i) => (e.event.type === 'turn_start' ? [i] : []));
      return starts.length >= 2 && es.slice(starts[1]).some((e) => e.event.type === 'message_update');
    };
    await coding.until(streamingSecondTurn, 'the long answer streaming');

    const [info] = (await fx.containers()).filter((c) => c.Labels[LABEL_OWNER] === id);
    const container = docker.getContainer(info.Id);
    const exec = await container.exec({ Cmd: ['sh', '-c', 'kill -9 $(pgrep -f /opt/taskd/dist/taskd/main.js)'] });
    await exec.start({});

    // The model call in flight is cut (no one is left to read it), and the control stream says what happened.
    await eventually(() => inFlight.closedEarly, LONG, 'the in-flight model call cut');
    await control.untilType('init_complete', (e) => e.event.resumed === true);
    const errors = control.envelopes.filter((e) => e.event.type === 'daemon_error').map((e) => String(e.event.message));
    expect(errors.some((m) => /lost the daemon's event stream/.test(m))).toBe(true);
    expect(errors.some((m) => /restarted/.test(m))).toBe(true);
    expect(errors.some((m) => /turn .*cut/.test(m))).toBe(true);
    expect((await tb.get(`/sandboxes/${id}`)).json.status).toBe('running');

    // The next prompt is answered, with the conversation the daemon saved.
    const before = fx.stub.requests.length;
    expect((await tb.post(`/sandboxes/${id}/prompt`, { message: 'which word?' })).status).toBe(202);
    await coding.until((es) => es.some((e) => finalAnswer(e) && JSON.stringify(e.event.message).includes('Noted: which word?')), 'the answer after the restart');
    const after = fx.stub.requests.slice(before).find((q) => lastUserText(q) === 'which word?');
    expect(JSON.stringify(after?.body.messages)).toContain('remember the word banana');
    expect((await container.inspect()).RestartCount).toBe(1);

    // A new sandbox works beside it; both end cleanly.
    const second = await tb.post('/sandboxes', { repo: 'acme/demo-repo', prompt: 'hello again' });
    expect(second.status).toBe(201);
    const secondCoding = await open(second.json.id, 'coding');
    await secondCoding.until((es) => es.some(finalAnswer), 'the new sandbox answering');
    for (const sid of [id, second.json.id as string]) expect((await tb.request('DELETE', `/sandboxes/${sid}`)).json.status).toBe('terminated');
    await eventually(async () => (await fx.containers()).length === 0, LONG, 'no task container left');
  });
});
