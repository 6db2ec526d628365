/**
 * execd on the two kinds of sandbox whose containers run an entry process of their own: a sandbox
 * group's member (its forwarder, a read-only root, its disk at /workspace) and a task sandbox (its
 * daemon). Each runs a command and writes and reads a file through `/sandboxes/{id}/execd`, with
 * OpenSandbox's own SDK, and what execd writes is what the sandbox's own API sees (the member's
 * terminal, the task's cloned repository). A member's id is `<group>/<sandbox>` (its slash
 * percent-encoded in the path). A task whose daemon crashed (its container starts it again, every
 * process in it dying) is served again. Once the sandbox is gone, its id answers as an unknown one
 * does, byte for byte.
 *
 * The group's disks are loop-mounted ext4 images, which needs root on the engine's host: without it
 * that suite fails under CI and is skipped loudly elsewhere.
 * @backend docker
 */
import { request } from 'undici';
import Dockerode from 'dockerode';
import { LABEL_OWNER } from '../../src/backends/docker/containers/labels';
import { startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { groupBrokerEnv, makeGroupFixtures, type GroupFixtures } from '../helpers/groupFixtures';
import { describeDocker } from '../helpers/dockerSuite';
import { execdSdk } from '../helpers/execdClient';
import { sdkExecd } from '../helpers/execdSdk';
import { taskFixture, README, type TaskFixture } from '../helpers/taskSuite';
import { SseReader } from '../../devtools/taskStreams';
import { bashToEnd } from '../../devtools/groupClient';

jest.setTimeout(240_000);

const root = process.getuid?.() === 0;
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';

/** One command through execd's SDK: its stdout lines joined, or a throw with its stderr. */
async function run(brokerUrl: string, id: string, command: string): Promise<string> {
  const { commands } = execdSdk(brokerUrl, encodeURIComponent(id));
  const result = await commands.run(command);
  if (result.exitCode !== 0 || result.error) throw new Error(`${command}: exit ${result.exitCode}: ${result.logs.stderr.map((m) => m.text).join('\n')}`);
  return result.logs.stdout.map((m) => m.text).join('\n');
}

/** The raw answer to execd's ping of `id` (percent-encoded in the path), its body as bytes. */
async function ping(brokerUrl: string, id: string): Promise<{ status: number; body: string }> {
  const res = await request(`${brokerUrl}/sandboxes/${encodeURIComponent(id)}/execd/ping`);
  return { status: res.statusCode, body: await res.body.text() };
}

/** What an id no sandbox ever had gets, for comparison: the same bytes with the id in them. */
function unknownBody(id: string): string {
  return JSON.stringify({ code: 'NOT_FOUND', message: `Session not found: ${id}` });
}

(root || ci ? describe : describe.skip)('execd on a sandbox group member (Docker)', () => {
  let tb: TestBroker;
  let fx: GroupFixtures;
  let memberId = '';
  let sandboxUrl = '';

  beforeAll(async () => {
    if (!root) throw new Error('this suite needs root (loop-mounted sandbox disks); CI must run it as root');
    fx = makeGroupFixtures('bkr-execd-group');
    tb = await startTestBroker(groupBrokerEnv(fx, testDeployment(`execd-group-${process.pid}`)));
    expect((await tb.post('/group/start', {})).status).toBe(200);
    const started = await tb.post('/sandbox/start', { id: 'ex1', compute_resources: { cpu_cores: 0.25, ram_gb: 0.25, disk_gb: 0.05 } });
    expect(started.status).toBe(200);
    sandboxUrl = started.json.sandbox_url as string;
    memberId = `${tb.broker.groups.groupId}/ex1`;
  });
  afterAll(async () => {
    await tb?.post('/group/stop').catch(() => undefined);
    await tb?.close();
    fx?.remove();
  });

  it('runs a command in the member, in its working directory, with its environment', async () => {
    expect((await ping(tb.url, memberId)).status).toBe(200);
    expect(await run(tb.url, memberId, 'echo hi; pwd; echo $SANDBOX_ID')).toBe('hi\n/workspace\nex1');
  });

  it("writes and reads its files: execd's writes are its terminal's, and the terminal's execd's", async () => {
    const { files } = sdkExecd(tb.url, memberId);
    await files.writeFiles([{ path: '/workspace/from-execd.txt', data: 'via execd', mode: 640 }]);
    expect((await bashToEnd(sandboxUrl, 'cat /workspace/from-execd.txt; stat -c %a /workspace/from-execd.txt')).stdout).toBe('via execd640\n');
    await bashToEnd(sandboxUrl, 'printf "via terminal" > /workspace/from-terminal.txt');
    expect(await files.readFile('from-terminal.txt')).toBe('via terminal');
    expect(await run(tb.url, memberId, 'cat /workspace/from-execd.txt')).toBe('via execd');
  });

  it('answers a stopped member and an unknown one as it answers any unknown id', async () => {
    const nobody = `${tb.broker.groups.groupId}/nobody`;
    expect(await ping(tb.url, nobody)).toEqual({ status: 404, body: unknownBody(nobody) });
    expect((await tb.post('/sandbox/stop', { id: 'ex1' })).status).toBe(200);
    expect(await ping(tb.url, memberId)).toEqual({ status: 404, body: unknownBody(memberId) });
  });
});

describeDocker('execd on a task sandbox (Docker)', () => {
  let fx: TaskFixture;
  let tb: TestBroker;
  let id = '';
  let control: SseReader;
  const readers: SseReader[] = [];
  const docker = new Dockerode();

  beforeAll(async () => {
    fx = await taskFixture('execd');
    tb = await fx.startBroker();
    fx.stub.reply = () => ({ text: ['Noted.'] });
    const created = await tb.post('/sandboxes', { repo: 'acme/demo-repo', prompt: 'hello' });
    expect(created.status).toBe(201);
    id = created.json.id as string;
    control = await SseReader.open(`${tb.url}/sandboxes/${id}/stream/control`, {});
    readers.push(control);
    // The repository is cloned once init_complete is said.
    await control.untilType('init_complete');
  });
  afterAll(async () => {
    await Promise.all(readers.map((r) => r.close()));
    await tb?.close();
    await fx?.close();
  });

  it('runs a command in the task container, beside its daemon', async () => {
    expect(tb.broker.directory.find(id)).toMatchObject({ kind: 'task', capabilities: { shell: true, files: true } });
    expect((await ping(tb.url, id)).status).toBe(200);
    expect(await run(tb.url, id, 'echo hi; pwd; test -S "$TASKD_SOCKET" && echo daemon-socket')).toBe('hi\n/root\ndaemon-socket');
  });

  it('writes and reads its files, the cloned repository included', async () => {
    const { files } = sdkExecd(tb.url, id);
    expect(await files.readFile('workspace/demo-repo/README.md')).toBe(README);
    await files.writeFiles([{ path: '/root/workspace/demo-repo/NOTES.md', data: 'from execd\n' }]);
    expect(await run(tb.url, id, 'cd workspace/demo-repo && git status --porcelain && cat NOTES.md')).toBe('?? NOTES.md\nfrom execd');
  });

  it('serves it again once its daemon crashed and its container started it again', async () => {
    const [info] = (await fx.containers()).filter((c) => c.Labels[LABEL_OWNER] === id);
    const container = docker.getContainer(info.Id);
    const kill = await container.exec({ Cmd: ['sh', '-c', 'kill -9 $(pgrep -f /opt/taskd/dist/taskd/main.js)'] });
    await kill.start({});
    // Every process of the container died with it, execd's shells and the broker's control shell too.
    await control.untilType('daemon_error', (e) => /restarted/.test(String(e.event.message)));
    expect((await container.inspect()).RestartCount).toBe(1);
    expect(await run(tb.url, id, 'cat workspace/demo-repo/NOTES.md')).toBe('from execd');
  });

  it('answers a deleted task and an unknown one as it answers any unknown id', async () => {
    const nobody = 'task-000000000000';
    expect(await ping(tb.url, nobody)).toEqual({ status: 404, body: unknownBody(nobody) });
    expect((await tb.request('DELETE', `/sandboxes/${id}`)).status).toBe(200);
    expect(await ping(tb.url, id)).toEqual({ status: 404, body: unknownBody(id) });
  });
});
