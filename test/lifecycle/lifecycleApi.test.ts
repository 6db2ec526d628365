/**
 * OpenSandbox's lifecycle API, driven by OpenSandbox's own TypeScript SDK, unchanged, pointed only
 * at the broker's address (and its token as the API key): create from a warm pool of whole
 * containers and from another image (Docker: a dedicated container with the limits asked; local: a
 * fresh working root, docs/lifecycle.md), get and list with filters, renew, pause and resume, expiry, kill,
 * endpoints, the parts not served (501) and bad input (400), and the token.
 *
 * Every create waits for the SDK's own readiness check (a ping of the sandbox's execd, through the
 * endpoint the broker gave). The execd cases here are what the lifecycle API decides (a sandbox's
 * env, its working directory, its isolation); execd's own tests cover execd.
 */
import fs from 'node:fs';
import path from 'node:path';
import Dockerode from 'dockerode';
import { Sandbox, SandboxManager, type ConnectionConfigOptions } from '@alibaba-group/opensandbox';
import { sdkError } from '../helpers/execdClient';
import { startTestBroker, testBackend, eventually, metricValue, type TestBroker, type HttpResult } from '../helpers/broker';

const TOKEN = 'lifecycle-test-token';
const docker = testBackend === 'docker';
const warmImage = docker ? (process.env.BROKER_IMAGE ?? 'bash-broker-test:latest') : 'warm-image:1';
/** Docker: the other image built by scripts/docker-images.sh; local: any name no pool has. */
const otherImage = docker ? (warmImage.startsWith('bash-broker-sandbox') ? 'bash-broker-test:latest' : 'bash-broker-sandbox:latest') : 'other-image:1';

describe(`the lifecycle API through the OpenSandbox SDK (${testBackend})`, () => {
  let tb: TestBroker;
  let connection: ConnectionConfigOptions;
  let manager: SandboxManager;
  const created: Sandbox[] = [];

  /** The SDK's create, as a user writes it (with its readiness ping of execd). */
  async function create(options: Partial<Parameters<typeof Sandbox.create>[0]> = {}): Promise<Sandbox> {
    const sandbox = await Sandbox.create({ connectionConfig: connection, image: warmImage, ...options });
    created.push(sandbox);
    return sandbox;
  }

  /** A raw call with the token as the SDK sends it. */
  function api(method: string, path: string, body?: unknown, key = TOKEN): Promise<HttpResult> {
    const headers: Record<string, string> = { 'OPEN-SANDBOX-API-KEY': key };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return tb.request(method, path, body === undefined ? undefined : JSON.stringify(body), headers);
  }

  const warmHealth = async (): Promise<{ available_sessions: number; in_use_sessions: number }> => (await tb.get('/health')).json.pools.warm;

  beforeAll(async () => {
    const pools = { warm: { image: warmImage, containers: 2, sessions_per_container: 1 } };
    tb = await startTestBroker({ BROKER_TOKEN: TOKEN, BROKER_POOLS: JSON.stringify(pools), BROKER_SANDBOX_MIN_TIMEOUT: '1', BROKER_SANDBOX_MAX_DEDICATED: '2' });
    connection = { domain: tb.url, apiKey: TOKEN, disableMetrics: true };
    manager = SandboxManager.create({ connectionConfig: connection });
    await eventually(async () => (await warmHealth()).available_sessions === 2, 120_000, 'the warm pool full');
  });
  afterAll(async () => {
    await Promise.all(created.map((s) => s.kill().catch(() => undefined)));
    await Promise.all(created.map((s) => s.close()));
    await manager?.close();
    await tb?.close();
  });

  it("creates from a warm pool at once: Running, its own whole container, and execd's endpoint on the broker", async () => {
    const a = await create({ metadata: { team: 'a', case: 'warm' }, env: { GREETING: 'hi there' } });
    const b = await create({ metadata: { team: 'b', case: 'warm' } });
    const info = await a.getInfo();
    expect(info).toMatchObject({ id: a.id, status: { state: 'Running' }, image: { uri: warmImage }, metadata: { team: 'a', case: 'warm' }, entrypoint: ['tail', '-f', '/dev/null'] });
    expect(info.createdAt).toBeInstanceOf(Date);
    // The SDK's default timeout is 600 s.
    expect(info.expiresAt!.getTime() - info.createdAt.getTime()).toBe(600_000);
    const address = tb.url.replace('http://', '');
    expect(await a.getEndpoint(44772)).toEqual({ endpoint: `${address}/sandboxes/${a.id}/execd`, headers: {} });
    const proxied = await Sandbox.connect({ sandboxId: a.id, connectionConfig: { ...connection, useServerProxy: true } });
    expect(await proxied.isHealthy()).toBe(true);
    expect(await proxied.getEndpoint(44772)).toEqual({ endpoint: `${address}/sandboxes/${a.id}/execd`, headers: {} });
    await proxied.close();
    // Isolation: each sandbox is a whole container of the pool, and execd may use it unconfined.
    const directory = tb.broker.directory;
    const [ha, hb] = [directory.resolve(a.id), directory.resolve(b.id)];
    expect(ha.container.id).not.toBe(hb.container.id);
    expect({ confined: ha.confined, env: ha.env }).toEqual({ confined: !docker, env: { GREETING: 'hi there' } });
    expect(await warmHealth()).toMatchObject({ in_use_sessions: 2, available_sessions: 0 });
    const metrics = (await api('GET', '/metrics')).text;
    expect(metricValue(metrics, 'broker_lifecycle_sandboxes', { place: 'pool' })).toBe(2);
    expect(metricValue(metrics, 'broker_lifecycle_sandboxes', { state: 'running' })).toBe(2);
    // Through execd, as the SDK runs it: the create's env, its own working directory.
    const run = await a.commands.run('echo "$GREETING"; pwd');
    expect(run.logs.stdout.map((m) => m.text)).toEqual(['hi there', ha.root.replace(/\/$/, '')]);
    if (docker) {
      // Nothing of one sandbox is seen from the other: files in /tmp, processes.
      const sleepers = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^sleep 300 $'";
      await a.commands.run('echo secret > /tmp/a-only; (sleep 300 &)');
      const inA = await a.commands.run(`test -e /tmp/a-only && echo seen; ${sleepers}`);
      expect(inA.logs.stdout.map((m) => m.text)).toEqual(['seen', '1']);
      const inB = await b.commands.run(`test -e /tmp/a-only && echo seen || echo unseen; ${sleepers}`);
      expect(inB.logs.stdout.map((m) => m.text)).toEqual(['unseen', '0']);
    }
    await a.kill();
    await b.kill();
  });

  it('kill ends it (Terminated, user_delete) and the warm container is replaced by a fresh one', async () => {
    await eventually(async () => (await warmHealth()).available_sessions === 2, 120_000, 'the warm pool refilled');
    const s = await create();
    const before = tb.broker.directory.resolve(s.id).container.id;
    // Locally a "container" is a working root, recreated at the same path: a file left in it must be gone.
    if (!docker) fs.writeFileSync(path.join(before, 'left-behind'), 'x');
    await s.kill();
    expect((await manager.getSandboxInfo(s.id)).status).toMatchObject({ state: 'Terminated', reason: 'user_delete' });
    await s.kill(); // idempotent
    await eventually(async () => (await warmHealth()).available_sessions === 2, 120_000, 'the warm pool refilled');
    const ids = tb.broker.pools.entries.find((e) => e.name === 'warm')!.pool.containers.map((c) => c.ref?.id);
    if (docker) expect(ids).not.toContain(before);
    else expect(fs.existsSync(path.join(before, 'left-behind'))).toBe(false);
  });

  it('creates another image in a container of its own, with its resource limits, env and entrypoint', async () => {
    const s = await create({ image: otherImage, resource: { cpu: '500m', memory: '512Mi' }, env: { DEDICATED: 'yes' }, entrypoint: ['sleep', 'infinity'], metadata: { case: 'dedicated' } });
    const info = await s.getInfo();
    expect(info).toMatchObject({ status: { state: 'Running' }, image: { uri: otherImage }, entrypoint: ['sleep', 'infinity'] });
    const handle = tb.broker.sandboxes.resolve(s.id);
    expect(handle.root).toBe(`/tmp/s/${s.id}/`);
    const run = await s.commands.run('echo "$DEDICATED"; pwd');
    expect(run.logs.stdout.map((m) => m.text)).toEqual(['yes', `/tmp/s/${s.id}`]);
    if (docker) {
      const engine = new Dockerode();
      const [found] = await engine.listContainers({ filters: { label: [`io.bash-broker.owner=${s.id}`] } });
      expect(found.Image).toBe(otherImage);
      const inspect = await engine.getContainer(found.Id).inspect();
      expect(inspect.HostConfig).toMatchObject({ NanoCpus: 500_000_000, Memory: 512 * 1024 * 1024 });
      expect(inspect.Config.Env).toContain('DEDICATED=yes');
      // The kernel's own view: the container's cgroup (v2 or v1) has the quota and the limit.
      const cgroup = await dockerExec(engine, found.Id, 'cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us; cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes; ps -eo args');
      expect(cgroup).toMatch(/^(50000 100000|50000)\n536870912\n/);
      expect(cgroup).toContain('sleep infinity');
      await s.kill();
      await eventually(async () => (await engine.listContainers({ all: true, filters: { label: [`io.bash-broker.owner=${s.id}`] } })).length === 0, 60_000, 'the container removed');
    } else {
      expect(handle.confined).toBe(true);
      expect(handle.env).toEqual({ DEDICATED: 'yes' });
      await s.kill();
    }
    expect((await s.getInfo()).status.state).toBe('Terminated');
  });

  it('a dedicated container that dies fails its sandbox (runtime_error), is removed, and frees its room', async () => {
    const s = await create({ image: otherImage, metadata: { case: 'dies' } });
    const { container } = tb.broker.sandboxes.resolve(s.id);
    const dedicated = async (): Promise<number> => metricValue((await api('GET', '/metrics')).text, 'broker_lifecycle_sandboxes', { place: 'dedicated' });
    expect(await dedicated()).toBe(1);
    // Docker: the engine kills it; locally its working root (the "container") is taken away.
    if (docker) await new Dockerode().getContainer(container.id).kill();
    else fs.rmSync(container.id, { recursive: true, force: true });
    await eventually(async () => (await s.getInfo()).status.state === 'Failed', 60_000, 'the sandbox Failed');
    expect((await s.getInfo()).status).toMatchObject({ state: 'Failed', reason: 'runtime_error', message: expect.stringMatching(/^its container failed: /) });
    await eventually(async () => (await dedicated()) === 0, 60_000, 'its room freed (the container removed)');
    // Its execd says so; nothing of it is left on the engine.
    const ping = await api('GET', `/sandboxes/${s.id}/execd/ping`);
    expect(ping.status).toBe(410);
    expect(ping.json.message).toMatch(/failed \(its container failed: .*\); create a new one/);
    if (docker) {
      const engine = new Dockerode();
      await eventually(async () => (await engine.listContainers({ all: true, filters: { label: [`io.bash-broker.owner=${s.id}`] } })).length === 0, 60_000, 'the container removed');
    }
  });

  it('get and list: state and metadata filters, pagination', async () => {
    const mine = await Promise.all([create({ metadata: { suite: 'list', team: 'x' } }), create({ metadata: { suite: 'list', team: 'y' } })]);
    const all = await manager.listSandboxInfos({ metadata: { suite: 'list' } });
    expect(all.items.map((i) => i.id).sort()).toEqual(mine.map((s) => s.id).sort());
    expect(all.pagination).toEqual({ page: 1, pageSize: 20, totalItems: 2, totalPages: 1, hasNextPage: false });
    const x = await manager.listSandboxInfos({ metadata: { suite: 'list', team: 'x' }, states: ['Running'] });
    expect(x.items.map((i) => i.id)).toEqual([mine[0].id]);
    expect((await manager.listSandboxInfos({ metadata: { suite: 'list' }, states: ['Paused'] })).items).toEqual([]);
    const page2 = await manager.listSandboxInfos({ metadata: { suite: 'list' }, page: 2, pageSize: 1 });
    expect(page2.items.map((i) => i.id)).toEqual([mine[1].id]);
    expect(page2.pagination).toEqual({ page: 2, pageSize: 1, totalItems: 2, totalPages: 2, hasNextPage: false });
    await mine[0].kill();
    expect((await manager.listSandboxInfos({ metadata: { suite: 'list' } })).items.map((i) => i.id)).toEqual([mine[1].id]);
    expect((await manager.listSandboxInfos({ metadata: { suite: 'list' }, states: ['Terminated'] })).items.map((i) => i.id)).toEqual([mine[0].id]);
    const missing = await sdkError(manager.getSandboxInfo('no-such-sandbox'));
    expect({ status: missing.statusCode, code: missing.error.code, message: missing.message }).toEqual({ status: 404, code: 'NOT_FOUND', message: 'Sandbox not found: no-such-sandbox' });
    await mine[1].kill();
  });

  it('renew moves the expiry; a sandbox past its expiry is terminated and its warm container reclaimed', async () => {
    const s = await create({ timeoutSeconds: 60 });
    const renewed = await s.renew(3600);
    expect(renewed.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 3500_000);
    expect((await s.getInfo()).expiresAt!.getTime()).toBe(renewed.expiresAt!.getTime());
    const earlier = await api('POST', `/v1/sandboxes/${s.id}/renew-expiration`, { expiresAt: new Date(Date.now() + 60_000).toISOString() });
    expect(earlier.status).toBe(400);
    expect(earlier.json.message).toMatch(/^expiresAt .* must be after the current one/);
    await s.kill();

    await eventually(async () => (await warmHealth()).available_sessions === 2, 120_000, 'the warm pool refilled');
    const short = await create({ timeoutSeconds: 2 });
    expect((await warmHealth()).in_use_sessions).toBe(1);
    await eventually(async () => (await short.getInfo()).status.state === 'Terminated', 60_000, 'the sandbox expired');
    expect((await short.getInfo()).status.reason).toBe('ttl_expiry');
    await eventually(async () => (await warmHealth()).available_sessions === 2, 120_000, 'its slot reclaimed');
    const late = await sdkError(short.renew(600));
    expect(late.statusCode).toBe(409);
  });

  it(docker ? 'pause freezes the container and resume thaws it' : 'pause and resume answer 501 on the local backend, saying why', async () => {
    const s = await create();
    if (!docker) {
      const err = await sdkError(s.pause());
      expect({ status: err.statusCode, code: err.error.code }).toEqual({ status: 501, code: 'NOT_SUPPORTED' });
      expect(err.message).toMatch(/^pause is not served by the local backend/);
      expect((await s.getInfo()).status.state).toBe('Running');
      await s.kill();
      return;
    }
    await s.pause();
    expect((await s.getInfo()).status.state).toBe('Paused');
    const engine = new Dockerode();
    const container = engine.getContainer(tb.broker.sandboxes.get(s.id).container.id);
    expect((await container.inspect()).State.Paused).toBe(true);
    expect((await sdkError(s.pause())).statusCode).toBe(409);
    // The pool's health checks leave a paused container alone: it is not replaced.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await warmHealth()).in_use_sessions).toBeGreaterThanOrEqual(1);
    const resumed = await s.resume();
    expect((await resumed.getInfo()).status.state).toBe('Running');
    expect((await container.inspect()).State.Paused).toBe(false);
    await resumed.close();
    await s.pause();
    await s.kill(); // a paused sandbox can be killed
    expect((await s.getInfo()).status.state).toBe('Terminated');
  });

  it('endpoints: execd and egress on the broker; a port nothing answers on 404; the egress policy served, its vault 501 in the envelope; snapshots where sessions are isolated', async () => {
    const s = await create();
    const egress = await s.getEndpoint(18080);
    expect(egress.endpoint).toBe(`${tb.url.replace('http://', '')}/sandboxes/${s.id}/egress`);
    // The egress in force (the sidecar's GET /policy): the docker test project's containers have no network at all.
    const inForce = await s.getEgressPolicy();
    expect(inForce).toEqual({ defaultAction: docker ? 'deny' : 'allow', egress: [] });
    // A rule that repeats the default changes nothing; one that differs cannot be held by a sandbox on its container's network (501); removing rules is idempotent.
    await s.patchEgressRules([{ action: inForce.defaultAction!, target: 'example.com' }]);
    expect((await sdkError(s.patchEgressRules([{ action: docker ? 'allow' : 'deny', target: 'example.com' }]))).statusCode).toBe(501);
    await s.deleteEgressRules(['example.com']);
    const badRules = await api('PATCH', `/sandboxes/${s.id}/egress/policy`, { action: 'allow' });
    expect({ status: badRules.status, code: badRules.json.code }).toEqual({ status: 400, code: 'INVALID_REQUEST_BODY' });
    const vault = await api('GET', `/sandboxes/${s.id}/egress/credential-vault`);
    expect(vault.json).toEqual({ code: 'NOT_SUPPORTED', message: expect.stringMatching(/^GET \/sandboxes\/\{sandboxId\}\/egress\/credential-vault: the egress sidecar/) });
    const other = await sdkError(s.getEndpoint(8080));
    expect({ status: other.statusCode, code: other.error.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
    // Locally nothing listens there; the docker test project's containers have no network at all.
    expect(other.message).toMatch(docker ? /^Sandbox .* is not reachable: its container has no network address/ : /^Port 8080 of sandbox .* has no endpoint: nothing listens on it/);
    // Snapshots: a whole container's sandbox has no session view to freeze (501 either way); the
    // store is served where sessions are isolated (docker), and is a 501 where they are not (local).
    const isolated = tb.broker.snapshots.served;
    const snapshotAnswers: [string, string, number][] = [
      ['POST', `/v1/sandboxes/${s.id}/snapshots`, 501],
      ['GET', '/v1/snapshots', isolated ? 200 : 501],
      // An id of no snapshot's form names none anywhere (404); one of its form is looked up where served.
      ['DELETE', '/v1/snapshots/snap_1', 404],
      ['GET', '/v1/snapshots/snap-0000000000000000', isolated ? 404 : 501],
      ['POST', '/v1/sandboxes', isolated ? 400 : 501],
    ];
    for (const [method, path, status] of snapshotAnswers) {
      // A restore of a snapshot this node never took: a bad field where snapshots are served.
      const body = path === '/v1/sandboxes' ? { snapshotId: 'snap-0000000000000000' } : method === 'POST' ? {} : undefined;
      const r = await api(method, path, body);
      expect({ status: r.status, code: r.json.code }).toEqual({ status, code: { 200: undefined, 400: 'INVALID_REQUEST_BODY', 404: 'NOT_FOUND', 501: 'NOT_SUPPORTED' }[status] });
    }
    // Egress denied: served where sessions have networks of their own (docker); 501 where they cannot (local).
    const denied = create({ networkPolicy: { defaultAction: 'deny', egress: [] } });
    if (docker) await (await denied).kill();
    else expect((await sdkError(denied)).statusCode).toBe(501);
    // Rules: this pool's sessions share their container's network (whole containers, no network named), so none can be held (test/isolation/sessionEgress.test.ts holds them).
    expect((await sdkError(create({ networkPolicy: { defaultAction: 'deny', egress: [{ action: 'allow', target: 'pypi.org' }] } }))).statusCode).toBe(501);
    expect((await api('GET', `/v1/sandboxes/${s.id}/endpoints/44772?expires=99`)).status).toBe(501);
    await s.kill();
  });

  it('bad input gets a 400 in the envelope and creates nothing', async () => {
    const before = (await manager.listSandboxInfos({ pageSize: 1000 })).pagination!.totalItems;
    const base = { image: { uri: warmImage }, entrypoint: ['tail', '-f', '/dev/null'] };
    const cases: [string, string, unknown, RegExp][] = [
      ['POST', '/v1/sandboxes', { entrypoint: ['x'] }, /^image is required/],
      ['POST', '/v1/sandboxes', { image: { uri: warmImage } }, /^entrypoint is required with image/],
      ['POST', '/v1/sandboxes', { ...base, resourceLimits: { cpu: 'lots' } }, /^resourceLimits\.cpu must be cores/],
      ['POST', '/v1/sandboxes', { ...base, resourceLimits: { memory: '1Mi' } }, /^resourceLimits\.memory must be at least 6Mi/],
      ['POST', '/v1/sandboxes', { ...base, resourceLimits: { gpu: '1' } }, /^resourceLimits: gpu not served/],
      ['POST', '/v1/sandboxes', { ...base, timeout: 0 }, /^timeout must be an integer number of seconds between 1 and 86400/],
      ['POST', '/v1/sandboxes', { ...base, colour: 'red' }, /^unknown field\(s\) colour/],
      ['POST', '/v1/sandboxes', { ...base, env: { 'BAD-NAME': 'x' } }, /^env: 'BAD-NAME' is not a valid variable name/],
      ['POST', '/v1/sandboxes', { ...base, platform: { os: 'windows', arch: 'amd64' } }, /cannot be satisfied/],
      ['POST', '/v1/sandboxes', { ...base, extensions: { poolRef: 'nope' } }, /^extensions\.poolRef 'nope' names no pool/],
      ['POST', '/v1/sandboxes', { ...base, image: { uri: otherImage }, extensions: { poolRef: 'warm' } }, /is not the image of pool 'warm'/],
      ['GET', '/v1/sandboxes?pageSize=0', undefined, /^pageSize must be an integer between 1 and 1000/],
      ['GET', '/v1/sandboxes?state=Sleeping', undefined, /^state Sleeping is not a sandbox state/],
      ['GET', '/v1/sandboxes/x/endpoints/70000', undefined, /^port must be an integer between 1 and 65535/],
    ];
    for (const [method, path, body, message] of cases) {
      const r = await api(method, path, body);
      expect({ path, body, status: r.status, code: r.json.code }).toEqual({ path, body, status: 400, code: 'INVALID_REQUEST_BODY' });
      expect(r.json.message).toMatch(message);
    }
    // OpenSandbox's pool mode: a pool by name, image and entrypoint left out.
    const byRef = await api('POST', '/v1/sandboxes', { extensions: { poolRef: 'warm' } });
    expect(byRef.status).toBe(202);
    expect((await api('GET', `/v1/sandboxes/${byRef.json.id}`)).json).toMatchObject({ image: { uri: warmImage }, status: { state: 'Running' } });
    expect((await api('DELETE', `/v1/sandboxes/${byRef.json.id}`)).status).toBe(204);
    const s = await create();
    for (const body of [{ expiresAt: 'tomorrow' }, { expiresAt: new Date(Date.now() - 1000).toISOString() }, { expiresAt: new Date(Date.now() + 7200_000).toISOString(), extra: 1 }]) {
      expect((await api('POST', `/v1/sandboxes/${s.id}/renew-expiration`, body)).status).toBe(400);
    }
    await s.kill();
    expect((await manager.listSandboxInfos({ pageSize: 1000 })).pagination!.totalItems).toBe(before);
  });

  it('takes OPEN-SANDBOX-API-KEY as the token, and nothing without it', async () => {
    const wrong = await sdkError(Sandbox.create({ connectionConfig: { ...connection, apiKey: 'wrong' }, image: warmImage }));
    expect({ status: wrong.statusCode, code: wrong.error.code }).toEqual({ status: 401, code: 'UNAUTHORIZED' });
    const none = await tb.request('GET', '/v1/sandboxes');
    expect({ status: none.status, code: none.json.code }).toEqual({ status: 401, code: 'UNAUTHORIZED' });
    expect((await api('GET', '/v1/sandboxes')).status).toBe(200);
    expect((await warmHealth()).in_use_sessions).toBe(0);
  });

  it('an image no pool serves and no dedicated room left: 503 with the reason', async () => {
    const held = await Promise.all([create({ image: otherImage }), create({ image: otherImage })]);
    const full = await sdkError(create({ image: otherImage }));
    expect(full.statusCode).toBe(503);
    expect(full.message).toMatch(/^2 dedicated containers run already \(BROKER_SANDBOX_MAX_DEDICATED=2\)/);
    await Promise.all(held.map((s) => s.kill()));
  });
});

/** Output of `sh -c command` in a container, through the engine (stdout and stderr demultiplexed). */
async function dockerExec(engine: Dockerode, id: string, command: string): Promise<string> {
  const exec = await engine.getContainer(id).exec({ Cmd: ['sh', '-c', command], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  const out = { write: (b: Buffer) => chunks.push(b) };
  engine.modem.demuxStream(stream, out as unknown as NodeJS.WritableStream, out as unknown as NodeJS.WritableStream);
  await new Promise((resolve) => stream.on('end', resolve));
  return Buffer.concat(chunks).toString();
}
