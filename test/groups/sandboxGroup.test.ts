/**
 * A whole sandbox group on real Docker, driven as a user would: a group with a populated
 * vector namespace, two sandboxes with different limits, tools and attachments (read_write, read),
 * a third with none; tools, a long command with /input and /output, a dying shell, database queries
 * from inside with python3's urllib; the limits read from the containers' own cgroup files; and a
 * group stop that leaves no container, process, mount, loop device, socket or listener.
 *
 * The disks are loop-mounted ext4 images, which needs root on the engine's host: without it the
 * suite fails under CI and is skipped loudly elsewhere.
 * @backend docker
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import Dockerode from 'dockerode';
import { eventually, startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { groupBrokerEnv, groupDirOf, makeGroupFixtures, type GroupFixtures } from '../helpers/groupFixtures';
import { bash, bashToEnd, call, dbCall, installDbClient, listening, mountsUnder, outputUntil, processAlive } from '../../devtools/groupClient';

jest.setTimeout(180_000);

const MiB = 1024 * 1024;
const DB = { database_type: 'vector', access_type: 'read_write', namespaces: ['default', 'other'] };
/** Prints the CPU quota and period, then the memory limit, from cgroup v1 files or cgroup v2's. */
const CGROUP_LIMITS = `if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us /sys/fs/cgroup/memory/memory.limit_in_bytes; else read q p < /sys/fs/cgroup/cpu.max; echo $q; echo $p; cat /sys/fs/cgroup/memory.max; fi`;
const root = process.getuid?.() === 0;
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';

function limitsOf(stdout: string): { quota: number; period: number; memory: number } {
  const [quota, period, memory] = stdout.trim().split('\n').map(Number);
  return { quota, period, memory };
}

const suite = root || ci ? describe : describe.skip;
if (!root && !ci) console.warn('*** SANDBOX GROUP SUITE SKIPPED: sandbox disks are loop-mounted ext4 images, which needs root ***');

suite('a sandbox group on Docker', () => {
  let tb: TestBroker;
  let fx: GroupFixtures;
  let groupDir: string;
  const deployment = testDeployment(`groups-${process.pid}`);
  const docker = new Dockerode();
  const urls: Record<string, string> = {};

  beforeAll(async () => {
    if (!root) throw new Error('this suite needs root (loop-mounted sandbox disks); CI must run it as root');
    fx = makeGroupFixtures('bkr-groups-docker');
    groupDir = groupDirOf(fx);
    // A short action wait, so that the long command below is still running when its observation answers.
    tb = await startTestBroker(groupBrokerEnv(fx, deployment, { BROKER_ACTION_WAIT: '1' }));
  });
  afterAll(async () => {
    await tb?.post('/group/stop').catch(() => undefined);
    await tb?.close();
    fx?.remove();
  });

  it('starts a group with a populated namespace, once', async () => {
    const started = await tb.post('/group/start', { database_access: DB, initial_database_population_config: fx.population });
    expect([started.status, started.json]).toEqual([200, { status: 'started' }]);
    const again = await tb.post('/group/start', { database_access: DB });
    expect([again.status, again.json.code]).toEqual([409, 'group_running']);
  });

  it('starts sandboxes with their own limits, tools and attachments', async () => {
    const a = await tb.post('/sandbox/start', {
      id: 'writer',
      tools: [fx.wordCountTool],
      compute_resources: { cpu_cores: 0.5, ram_gb: 0.5, disk_gb: 0.1, memory_bandwidth_gbps: 5.0, unit: 'absolute' },
      attached_databases: { vector_db: { database_type: 'vector', access_type: 'read_write', namespaces: ['default'] } },
    });
    expect(a.status).toBe(200);
    expect(a.json.sandbox_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(a.json.warnings).toEqual([expect.stringMatching(/memory_bandwidth_gbps .* not enforced/)]);
    expect(a.json.limits).toMatchObject({ cpu_cores: 0.5, memory_bytes: 512 * MiB, disk_enforcement: expect.stringMatching(/loop device/) });
    const b = await tb.post('/sandbox/start', {
      id: 'reader',
      tools: [fx.echoArgsTool],
      compute_resources: { cpu_cores: 1, ram_gb: 0.25, disk_gb: 0.05 },
      attached_databases: { vector_db: { database_type: 'vector', access_type: 'read', namespaces: ['default'] } },
    });
    expect([b.status, b.json.warnings]).toEqual([200, []]);
    const c = await tb.post('/sandbox/start', { id: 'loner', compute_resources: { cpu_cores: 0.25, ram_gb: 0.125, disk_gb: 0.05 } });
    expect(c.status).toBe(200);
    urls.writer = a.json.sandbox_url;
    urls.reader = b.json.sandbox_url;
    urls.loner = c.json.sandbox_url;
    expect(new Set(Object.values(urls)).size).toBe(3); // a port each
    const dup = await tb.post('/sandbox/start', { id: 'writer' });
    expect([dup.status, dup.json.code]).toEqual([409, 'sandbox_exists']);
    for (const url of Object.values(urls)) expect(await call(`${url}/health`, 'GET')).toEqual({ status: 200, json: { status: 'healthy' } });
  });

  it('enforces each sandbox limits inside its container (cgroup files, disk, read-only root)', async () => {
    const writer = limitsOf((await bashToEnd(urls.writer, CGROUP_LIMITS)).stdout);
    expect(writer).toEqual({ quota: 50_000, period: 100_000, memory: 512 * MiB });
    const reader = limitsOf((await bashToEnd(urls.reader, CGROUP_LIMITS)).stdout);
    expect(reader).toEqual({ quota: 100_000, period: 100_000, memory: 256 * MiB });
    const fill = await bashToEnd(urls.writer, 'dd if=/dev/zero of=/workspace/big bs=1M count=300 2>&1 | grep -o "No space left on device"; df -k /workspace | tail -1');
    expect(fill.stdout).toMatch(/No space left on device/);
    const sizeKiB = Number(fill.stdout.trim().split('\n').pop()!.split(/\s+/)[1]);
    expect(sizeKiB).toBeLessThanOrEqual(0.1 * 1024 * 1024); // the filesystem is disk_gb, no more
    expect((await bashToEnd(urls.writer, 'rm -f /workspace/big; touch /usr/x 2>&1; echo ok > /tmp/t && cat /tmp/t')).stdout).toMatch(/Read-only file system[\s\S]*ok/);
  });

  it('runs tools with their args as JSON, and says so for an unknown function', async () => {
    const r = await call(`${urls.writer}/execute`, 'POST', {
      actions: { word_count: { description: 'count', args: { text: 'hello big world', upper: true } }, echo_args: { args: {} }, bash: { args: { command: 'echo $SANDBOX_ID' } } },
    });
    expect(r.status).toBe(200);
    const [tool, unknown, shell] = r.json.observations;
    expect(tool).toEqual({ stdout: '{"words": 3, "first": "HELLO"}', stderr: 'counting\n', terminal_still_running: false, exit_code: 0 });
    expect(unknown.stderr).toMatch(/unknown function 'echo_args': this sandbox has bash, word_count/);
    expect(shell.stdout).toBe('writer\n');
    const echoed = await call(`${urls.reader}/execute`, 'POST', { actions: [{ function: 'echo_args', args: { b: 2, a: [1] } }] });
    expect(echoed.json.observations[0].stdout).toBe('args={"a": [1], "b": 2}');
  });

  it('answers a long command as still running, then takes /input and gives /output', async () => {
    const first = await bash(urls.writer, 'echo begin; sleep 2; read -p "name? " who; echo "got $who"');
    expect(first).toMatchObject({ stderr: '', terminal_still_running: true, exit_code: null });
    const busy = await bash(urls.writer, 'echo no');
    expect(busy).toMatchObject({ terminal_still_running: true, stderr: expect.stringMatching(/still running an earlier command/) });
    const prompt = await outputUntil(urls.writer, (all) => all.includes('name? '));
    expect(first.stdout + prompt.all).toBe('begin\nname? \n');
    expect(await call(`${urls.writer}/input`, 'POST', { text: 'bob\r' })).toEqual({ status: 200, json: { status: 'success' } });
    const rest = await outputUntil(urls.writer, (all, running) => all.includes('got bob') && !running);
    expect(rest.running).toBe(false);
    expect((await bashToEnd(urls.writer, 'echo after')).stdout).toBe('after\n');
  });

  it('replaces a shell that dies and says so', async () => {
    const died = await bash(urls.writer, 'cd /tmp; exit 3');
    expect(died.exit_code).toBe(3);
    expect(died.stderr).toMatch(/a fresh shell took its place/);
    expect(await bashToEnd(urls.writer, 'pwd')).toMatchObject({ stdout: '/workspace\n', stderr: '', exit_code: 0 });
    expect((await call(`${urls.writer}/health`, 'GET')).json).toEqual({ status: 'healthy' });
  });

  it('serves the database inside the attached sandboxes only, read-only where attached so', async () => {
    await installDbClient(urls.writer);
    await installDbClient(urls.reader);
    const hits = await dbCall(urls.writer, 'POST', '/namespaces/default/query', { embedding: [0, 0.1, 0.9], k: 2 });
    expect(hits.status).toBe(200);
    expect(hits.json.results.map((h: { id: string }) => h.id)).toEqual(['grass', 'sky']);
    expect(hits.json.results[0]).toMatchObject({ text: 'grass is green', metadata: { kind: 'plant' } });
    const written = await dbCall(urls.writer, 'POST', '/namespaces/default/documents', { documents: [{ id: 'sea', text: 'the sea', metadata: {}, embedding: [0, 0.7, 0.7] }] });
    expect([written.status, written.json]).toEqual([200, { upserted: 1 }]);
    // The reader sees the writer's document, and cannot write or delete.
    expect((await dbCall(urls.reader, 'GET', '/namespaces/default/documents/sea')).json).toMatchObject({ id: 'sea', text: 'the sea' });
    const refused = await dbCall(urls.reader, 'POST', '/namespaces/default/documents', { documents: [{ id: 'x', text: 'x', embedding: [1, 1, 1] }] });
    expect([refused.status, refused.json.code]).toEqual([403, 'forbidden']);
    expect((await dbCall(urls.reader, 'DELETE', '/namespaces/default/documents/sea')).status).toBe(403);
    // A namespace not attached is out of reach, even though the group has it.
    expect((await dbCall(urls.writer, 'POST', '/namespaces/other/query', { embedding: [1, 0, 0] })).status).toBe(403);
    // Without an attachment: no URL, no socket, nothing on the loopback port.
    const loner = await bashToEnd(urls.loner, 'env | grep -c _URL; ls /run/sandbox-db 2>&1; python3 -c "import socket; socket.create_connection((\'127.0.0.1\', 7700), 2)" 2>&1 | tail -1');
    expect(loner.stdout).toMatch(/^0\n.*No such file or directory\n.*Connection refused/);
  });

  it('stops a sandbox, 404 for an unknown one', async () => {
    const port = Number(new URL(urls.loner).port);
    // A sandbox of the broker's directory while it runs, named with its group's id.
    const inDirectory = (): string[] => tb.broker.directory.list('group').map((s) => s.id.split('/')[1]);
    expect(inDirectory()).toContain('loner');
    expect(await tb.post('/sandbox/stop', { id: 'loner' })).toMatchObject({ status: 200, json: { status: 'stopped' } });
    expect(inDirectory()).not.toContain('loner');
    expect(await listening(port)).toBe(false);
    const again = await tb.post('/sandbox/stop', { id: 'loner' });
    expect([again.status, again.json.code]).toEqual([404, 'sandbox_not_found']);
  });

  it('stops the group and leaves nothing behind', async () => {
    const containers = await docker.listContainers({ all: true, filters: { label: [`io.bash-broker.deployment=${deployment}`, 'io.bash-broker.kind=group'] } });
    expect(containers.map((c) => c.Names[0]).sort()).toEqual([expect.stringMatching(/-reader$/), expect.stringMatching(/-writer$/)]);
    const inspected = await Promise.all(containers.map((c) => docker.getContainer(c.Id).inspect()));
    const pids = inspected.map((i) => i.State.Pid);
    expect(inspected.flatMap((i) => i.Mounts).every((m) => m.Type === 'bind')).toBe(true); // no volume to leave
    const sockets = fs.readdirSync(groupDir, { recursive: true }).filter((f) => String(f).endsWith('.sock'));
    expect(sockets).toHaveLength(2);
    expect(mountsUnder(groupDir)).toHaveLength(2);

    expect(await tb.post('/group/stop')).toMatchObject({ status: 200, json: { status: 'stopped' } });

    expect(await docker.listContainers({ all: true, filters: { label: [`io.bash-broker.deployment=${deployment}`, 'io.bash-broker.kind=group'] } })).toEqual([]);
    await eventually(() => pids.every((pid) => !processAlive(pid)), 20_000, 'the containers processes to end');
    expect(mountsUnder(groupDir)).toEqual([]);
    expect(execFileSync('losetup', ['-a'], { encoding: 'utf8' })).not.toContain(groupDir);
    expect(fs.readdirSync(path.join(groupDir, deployment))).toEqual([]); // databases, disks, sockets, tools: gone
    for (const url of [urls.writer, urls.reader]) expect(await listening(Number(new URL(url).port))).toBe(false);
  });

  it('answers a sandbox whose container died as unhealthy, and still stops it cleanly', async () => {
    expect((await tb.post('/group/start', {})).status).toBe(200); // a new group starts at once
    const started = await tb.post('/sandbox/start', { id: 'doomed', compute_resources: { cpu_cores: 0.25, ram_gb: 0.125, disk_gb: 0.05 } });
    expect(started.status).toBe(200);
    const url = started.json.sandbox_url as string;
    const [c] = await docker.listContainers({ filters: { label: [`io.bash-broker.deployment=${deployment}`, 'io.bash-broker.kind=group'] } });
    await docker.getContainer(c.Id).kill();
    await eventually(async () => (await call(`${url}/health`, 'GET')).status === 503, 30_000, 'the dead sandbox to answer 503');
    expect((await call(`${url}/health`, 'GET')).json).toMatchObject({ status: 'unhealthy', reason: expect.stringMatching(/exited|control shell|no shell/) });
    expect((await tb.post('/sandbox/stop', { id: 'doomed' })).status).toBe(200);
    expect(await docker.listContainers({ all: true, filters: { label: [`io.bash-broker.deployment=${deployment}`, 'io.bash-broker.kind=group'] } })).toEqual([]);
    expect(mountsUnder(groupDir)).toEqual([]);
  });

  it('lets a group stop win over a sandbox start under way, leaving nothing', async () => {
    const start = tb.post('/sandbox/start', { id: 'racer', compute_resources: { cpu_cores: 0.25, ram_gb: 0.125, disk_gb: 0.05 } });
    await new Promise((r) => setTimeout(r, 50)); // the start is past its checks, making its disk or container
    const stop = await tb.post('/group/stop');
    expect(stop.status).toBe(200);
    const started = await start;
    // Either the start finished first (then the stop took it) or it saw the stop and undid itself.
    expect([200, 409]).toContain(started.status);
    if (started.status === 409) expect(started.json.code).toBe('group_not_started');
    expect(await docker.listContainers({ all: true, filters: { label: [`io.bash-broker.deployment=${deployment}`, 'io.bash-broker.kind=group'] } })).toEqual([]);
    expect(mountsUnder(groupDir)).toEqual([]);
    expect(fs.readdirSync(path.join(groupDir, deployment))).toEqual([]);
  });
});
