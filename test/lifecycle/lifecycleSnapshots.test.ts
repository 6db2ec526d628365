/**
 * OpenSandbox's snapshot routes of the lifecycle API (docs/lifecycle.md, docs/snapshots.md) on
 * isolated docker sessions, over real HTTP: a sandbox that is an isolated session of a shared
 * container (an image of a configured pool, where the node serves images) is snapshotted with
 * files written through its execd, restored into a new sandbox that sees them and its create's
 * env, and whose writes are its own; snapshots are listed (filters, pages), fetched and deleted (not
 * while a restored sandbox lies on one); bad input gets OpenSandbox's codes and changes nothing; a
 * whole container's sandbox answers 501 saying why (409 while paused); past the node's budget, 507. The same through OpenSandbox's own SDK.
 * @backend docker
 */
import { Sandbox, SandboxManager } from '@alibaba-group/opensandbox';
import { startTestBroker, eventually, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { execdBase, sse, textOf } from '../helpers/execdClient';

jest.setTimeout(240_000);

const IMAGE = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
/** The whole containers' pool runs another image: a create of IMAGE must reach the shared pool. */
const WHOLE_IMAGE = IMAGE.startsWith('bash-broker-sandbox') ? 'bash-broker-test:latest' : 'bash-broker-sandbox:latest';
const JSON_HEADERS = { 'content-type': 'application/json' };

describeDocker("a lifecycle sandbox's snapshots", () => {
  let tb: TestBroker;

  const api = async (method: string, path: string, body?: unknown) => tb.request(method, path, body === undefined ? undefined : JSON.stringify(body), body === undefined ? {} : JSON_HEADERS);
  /** One command through the sandbox's execd, its stdout. */
  const run = async (id: string, command: string): Promise<string> => {
    const r = await sse(`${execdBase(tb.url, id)}/command`, { command });
    if (r.status !== 200) throw new Error(`execd ${r.status} ${JSON.stringify(r.error)}`);
    return textOf(r.events, 'stdout').trim();
  };
  const create = async (body: Record<string, unknown>): Promise<string> => {
    const r = await api('POST', '/v1/sandboxes', { entrypoint: ['tail', '-f', '/dev/null'], timeout: 600, ...body });
    if (r.status !== 202) throw new Error(`create ${r.status} ${r.text}`);
    return r.json.id as string;
  };

  beforeAll(async () => {
    // Images on demand on (an allow list no image here matches): a create of a configured pool's
    // image without limits is a lease of that pool, an isolated session of a shared container.
    tb = await startTestBroker({
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '4',
      BROKER_IMAGE_ALLOW: '127.0.0.1:9/none/*',
      BROKER_ACQUIRE_TIMEOUT: '60',
      // Room for the small snapshots here, not for a sandbox that wrote 2 MB.
      BROKER_SNAPSHOT_BUDGET: '1m',
      BROKER_POOLS: JSON.stringify({ whole: { image: WHOLE_IMAGE, containers: 1, sessions_per_container: 1 } }),
    });
    await eventually(async () => (await tb.get('/health')).json.pools.whole.available_sessions === 1, 120_000, 'the whole containers pool warm');
  }, 180_000);
  afterAll(async () => tb?.close(), 60_000);

  it('snapshots a sandbox, restores it into a new one that sees its files and env, lists, gets and deletes', async () => {
    const source = await create({ image: { uri: IMAGE }, env: { STEP: '3' }, metadata: { case: 'snap' } });
    expect(tb.broker.sandboxes.get(source).place.kind).toBe('pool');
    await run(source, 'mkdir -p /root/repo && echo patched >/root/repo/a.txt && echo cfg >/etc/branch.conf && rm -f /etc/motd');

    const taken = await api('POST', `/v1/sandboxes/${source}/snapshots`, { name: 'step-3' });
    expect(taken.status).toBe(202);
    const snap = taken.json as { id: string; createdAt: string };
    expect(snap).toEqual({ id: expect.stringMatching(/^snap-[0-9a-f]{16}$/), sandboxId: source, name: 'step-3', status: { state: 'Ready', reason: 'snapshot_ready', message: 'snapshot is ready', lastTransitionAt: snap.createdAt }, createdAt: expect.any(String) });
    expect(taken.headers.location).toBe(`/v1/snapshots/${snap.id}`);
    // The source goes on; what it writes after the snapshot is not the snapshot's.
    await run(source, 'echo after >/root/repo/a.txt');

    // A restore as the SDK sends it: no entrypoint, its default limits (a session keeps its pool's).
    const restored = await create({ snapshotId: snap.id, entrypoint: undefined, resourceLimits: { cpu: '1', memory: '2Gi' }, env: { EXTRA: 'x' } });
    const info = await api('GET', `/v1/sandboxes/${restored}`);
    expect(info.json).toMatchObject({ id: restored, snapshotId: snap.id, status: { state: 'Running' }, entrypoint: ['tail', '-f', '/dev/null'] });
    expect(info.json.image).toBeUndefined();
    expect(await run(restored, 'echo "$(cat /root/repo/a.txt) $(cat /etc/branch.conf) $(test -e /etc/motd && echo motd || echo no-motd) $STEP $EXTRA"')).toBe('patched cfg no-motd 3 x');
    await run(restored, 'echo restored >/root/repo/a.txt');
    expect(await run(source, 'cat /root/repo/a.txt')).toBe('after');
    // A restore's create applies its own networkPolicy, as any create does (denied: its session has no network).
    const denied = await create({ snapshotId: snap.id, entrypoint: undefined, networkPolicy: { defaultAction: 'deny', egress: [] } });
    expect(await run(denied, 'echo "$(cat /root/repo/a.txt) $(awk \'NR > 2 { printf "%s", $1 }\' /proc/net/dev)"')).toBe('patched lo:');
    expect((await api('DELETE', `/v1/sandboxes/${denied}`)).status).toBe(204);

    expect((await api('GET', `/v1/snapshots/${snap.id}`)).json).toEqual(snap);
    const listed = async (query: string) => (await api('GET', `/v1/snapshots${query}`)).json;
    expect((await listed(`?sandboxId=${source}`)).items).toEqual([snap]);
    expect((await listed(`?sandboxId=${source}&state=Ready&state=Failed&name=step-3`)).items).toEqual([snap]);
    expect((await listed(`?sandboxId=${source}&state=Failed`)).items).toEqual([]);
    expect((await listed('?name=other')).items).toEqual([]);
    const second = await api('POST', `/v1/sandboxes/${source}/snapshots`);
    expect(second.status).toBe(202);
    expect(second.json.name).toBeUndefined();
    expect(await listed(`?sandboxId=${source}&page=2&pageSize=1`)).toEqual({ items: [second.json], pagination: { page: 2, pageSize: 1, totalItems: 2, totalPages: 2, hasNextPage: false } });

    // A restored sandbox lies on its snapshot: the delete waits for it to end.
    const inUse = await api('DELETE', `/v1/snapshots/${snap.id}`);
    expect({ status: inUse.status, code: inUse.json.code }).toEqual({ status: 409, code: 'RUNTIME_ERROR' });
    expect(inUse.json.message).toContain('in use');
    expect((await api('DELETE', `/v1/sandboxes/${restored}`)).status).toBe(204);
    for (const id of [snap.id, second.json.id]) expect((await api('DELETE', `/v1/snapshots/${id}`)).status).toBe(204);
    expect((await api('GET', `/v1/snapshots/${snap.id}`)).status).toBe(404);
    expect((await api('DELETE', `/v1/snapshots/${snap.id}`)).status).toBe(404);
    expect((await listed('')).items).toEqual([]);
    expect((await api('DELETE', `/v1/sandboxes/${source}`)).status).toBe(204);
  });

  it('refuses bad input in OpenSandbox codes, and a whole container with 501, changing nothing', async () => {
    const source = await create({ image: { uri: IMAGE } });
    const snap = (await api('POST', `/v1/sandboxes/${source}/snapshots`)).json.id as string;
    const whole = await create({ image: { uri: WHOLE_IMAGE } });
    const big = await create({ image: { uri: IMAGE } });
    await run(big, 'head -c 2000000 /dev/urandom >/root/big.bin');
    const before = { sandboxes: (await api('GET', '/v1/sandboxes')).json, snapshots: (await api('GET', '/v1/snapshots')).json };

    const cases: [string, string, unknown, number, string][] = [
      ['POST', '/v1/sandboxes/nope/snapshots', {}, 404, 'NOT_FOUND'],
      ['POST', `/v1/sandboxes/${source}/snapshots`, { colour: 1 }, 400, 'INVALID_REQUEST_BODY'],
      ['POST', `/v1/sandboxes/${source}/snapshots`, { name: '' }, 400, 'INVALID_REQUEST_BODY'],
      ['POST', `/v1/sandboxes/${source}/snapshots`, [1], 400, 'INVALID_REQUEST_BODY'],
      ['POST', `/v1/sandboxes/${whole}/snapshots`, {}, 501, 'NOT_SUPPORTED'],
      ['POST', `/v1/sandboxes/${big}/snapshots`, {}, 507, 'RUNTIME_ERROR'],
      ['GET', '/v1/snapshots/snap-0000000000000000', undefined, 404, 'NOT_FOUND'],
      ['GET', '/v1/snapshots/snap_123', undefined, 404, 'NOT_FOUND'],
      ['DELETE', '/v1/snapshots/snap-0000000000000000', undefined, 404, 'NOT_FOUND'],
      ['GET', '/v1/snapshots?state=Nope', undefined, 400, 'INVALID_REQUEST_BODY'],
      ['GET', '/v1/snapshots?page=0', undefined, 400, 'INVALID_REQUEST_BODY'],
      ['GET', '/v1/snapshots?pageSize=abc', undefined, 400, 'INVALID_REQUEST_BODY'],
      ['POST', '/v1/sandboxes', { snapshotId: 'snap-0000000000000000' }, 400, 'INVALID_REQUEST_BODY'],
      ['POST', '/v1/sandboxes', { snapshotId: 5 }, 400, 'INVALID_REQUEST_BODY'],
      ['POST', '/v1/sandboxes', { snapshotId: snap, image: { uri: IMAGE }, entrypoint: ['tail', '-f', '/dev/null'] }, 400, 'INVALID_REQUEST_BODY'],
      ['POST', '/v1/sandboxes', { snapshotId: snap, extensions: { poolRef: 'whole' } }, 400, 'INVALID_REQUEST_BODY'],
      ['POST', '/v1/sandboxes', { snapshotId: snap, entrypoint: ['python3', '-m', 'http.server'] }, 501, 'NOT_SUPPORTED'],
    ];
    const got = [];
    for (const [method, path, body] of cases) {
      const r = await api(method, path, body);
      got.push([method, path, body, r.status, r.json?.code]);
      expect(typeof r.json?.message).toBe('string');
    }
    expect(got).toEqual(cases);
    const refused = await api('POST', `/v1/sandboxes/${whole}/snapshots`, {});
    expect(refused.json.message).toMatch(/is a whole container of pool 'whole'/);

    expect({ sandboxes: (await api('GET', '/v1/sandboxes')).json, snapshots: (await api('GET', '/v1/snapshots')).json }).toEqual(before);
    // A snapshot is taken of a Running sandbox: a paused one is a 409 first (its pause changes its status, so after the comparison).
    expect((await api('POST', `/v1/sandboxes/${whole}/pause`)).status).toBe(202);
    const paused = await api('POST', `/v1/sandboxes/${whole}/snapshots`, {});
    expect({ status: paused.status, code: paused.json.code }).toEqual({ status: 409, code: 'RUNTIME_ERROR' });
    expect((await api('POST', `/v1/sandboxes/${whole}/resume`)).status).toBe(202);
    for (const id of [source, whole, big]) expect((await api('DELETE', `/v1/sandboxes/${id}`)).status).toBe(204);
    expect((await api('DELETE', `/v1/snapshots/${snap}`)).status).toBe(204);
  });

  it("through OpenSandbox's SDK: a snapshot, a sandbox created from it, the list, the delete", async () => {
    const connectionConfig = { domain: tb.url, disableMetrics: true };
    const manager = SandboxManager.create({ connectionConfig });
    // `resource: {}`: no limits of its own, so a session of the image's pool (the SDK's default asks for a core and 2 GiB).
    const source = await Sandbox.create({ connectionConfig, image: IMAGE, resource: {} });
    await source.commands.run('echo from-sdk >/root/sdk.txt');
    const snap = await manager.createSnapshot(source.id, { name: 'sdk' });
    expect(snap).toMatchObject({ sandboxId: source.id, name: 'sdk', status: { state: 'Ready' } });
    expect(snap.createdAt).toBeInstanceOf(Date);
    const restored = await Sandbox.create({ connectionConfig, snapshotId: snap.id });
    const seen = await restored.commands.run('cat /root/sdk.txt');
    expect(seen.logs.stdout.map((m) => m.text)).toEqual(['from-sdk']);
    expect((await restored.getInfo()).snapshotId).toBe(snap.id);
    expect((await manager.getSnapshot(snap.id)).id).toBe(snap.id);
    expect((await manager.listSnapshots({ sandboxId: source.id, states: ['Ready'] })).items.map((s) => s.id)).toEqual([snap.id]);
    await restored.kill();
    await manager.deleteSnapshot(snap.id);
    await expect(manager.getSnapshot(snap.id)).rejects.toMatchObject({ statusCode: 404 });
    await source.kill();
    await Promise.all([source.close(), restored.close(), manager.close()]);
  });
});
