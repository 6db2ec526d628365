/**
 * OpenSandbox's lifecycle API (/v1) fuzzed from its declared routes (lifecycleContract.ts, with the
 * bounds lifecycleInput.ts adds): a create body broken in one field (or with unknown fields) beside
 * an otherwise valid one, bodies that are no JSON object, bad list queries, metadata patches and
 * renewals a running sandbox must refuse, ports that are none, ids no sandbox has, snapshot bodies,
 * list queries and ids that are none, bodies past BROKER_MAX_BODY_BYTES and no token. The fields the
 * broker does not serve (egress policy, credential proxy, volumes) answer 501 by design and are left out. Every answer is a 4xx in
 * OpenSandbox's `{code, message}`, within a bound; the sandboxes (ids, states, expiry, metadata) and
 * the pools' counts are the same after each case as before. Every string of every route gets a name
 * and a path too long, a NUL byte and `..` (hostileStrings.ts): never a 5xx (but a declared 501).
 *
 * In every project: the strings a create takes reach the backend (a dedicated container is made and
 * removed), and on Docker an image.uri with `..` once threw from the engine's client and ended the
 * broker's process, which the local backend never shows.
 */
import fc from 'fast-check';
import { startTestBroker, testBackend, eventually, type TestBroker } from '../helpers/broker';
import { apiDocOf } from '../../src/http/contract';
import { LIFECYCLE_CONTRACT } from '../../src/api/lifecycle/lifecycleContract';
import { badSegment, idRoutes, invalidBody, publishedSchema, junkBody, nastyOrHugeText, nastyUrlText, type Schema } from '../helpers/fuzzInputs';
import { FuzzReport, endFuzz, fuzzTarget, fuzzParams, jsonHeaders, refused, type FuzzTarget } from '../helpers/fuzzHarness';
import { everyHostileCase, hostileCases } from '../helpers/hostileStrings';

const LIFECYCLE_API_DOC = apiDocOf(LIFECYCLE_CONTRACT);

const RUNS = 30;
const TOKEN = 'fuzz-lifecycle-token';
const AUTH = { 'OPEN-SANDBOX-API-KEY': TOKEN };
const MAX_BODY_BYTES = 64 * 1024;
const MIN_TIMEOUT_S = 60;
const MAX_TIMEOUT_S = 3600;
const warmImage = testBackend === 'docker' ? (process.env.BROKER_IMAGE ?? 'bash-broker-test:latest') : 'warm-image:1';
/** Served by design with 501 (not served here): no bad input, left out of the fuzzed fields. */
const UNSERVED = ['networkPolicy', 'credentialProxy', 'volumes'];

const DECLARED = publishedSchema(LIFECYCLE_API_DOC.schemas!.CreateSandboxRequest, LIFECYCLE_API_DOC.schemas);
/** lifecycleInput.ts: these objects may be null (none). */
const NULLABLE = ['resourceLimits', 'resourceRequests', 'env', 'metadata', 'extensions', 'platform'];
/** The declared create body, with what lifecycleInput.ts checks beyond it. */
const CREATE: Schema = {
  ...DECLARED,
  required: ['image', 'entrypoint'],
  properties: {
    ...Object.fromEntries(
      Object.entries(DECLARED.properties!)
        .filter(([k]) => !UNSERVED.includes(k))
        .map(([k, v]) => [k, NULLABLE.includes(k) ? { ...v, type: ['object', 'null'] } : v]),
    ),
    entrypoint: { type: 'array', items: { type: 'string' }, minItems: 1 },
    timeout: { type: ['integer', 'null'], minimum: MIN_TIMEOUT_S, maximum: MAX_TIMEOUT_S },
    image: { type: 'object', properties: { uri: { type: 'string', minLength: 1 } }, required: ['uri'], additionalProperties: false },
  },
};
const VALID_CREATE = { image: { uri: warmImage }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600, metadata: { case: 'fuzz' } };

interface LifecycleState {
  pools: unknown;
  sandboxes: unknown;
  snapshots: unknown;
}

describe(`the lifecycle API fuzzed (${testBackend})`, () => {
  let tb: TestBroker;
  let id: string;
  let t: FuzzTarget<LifecycleState>;
  const report = new FuzzReport(`lifecycle-${testBackend}`);

  beforeAll(async () => {
    const pools = { warm: { image: warmImage, containers: 1, sessions_per_container: 1 } };
    tb = await startTestBroker({
      BROKER_TOKEN: TOKEN,
      BROKER_POOLS: JSON.stringify(pools),
      BROKER_MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      BROKER_SANDBOX_MIN_TIMEOUT: String(MIN_TIMEOUT_S),
      BROKER_SANDBOX_MAX_TIMEOUT: String(MAX_TIMEOUT_S),
      BROKER_SANDBOX_MAX_DEDICATED: '1',
    });
    await eventually(async () => (await tb.get('/health')).json.pools.warm.available_sessions === 1, 120_000, 'the warm pool full');
    const created = await tb.request('POST', '/v1/sandboxes', JSON.stringify(VALID_CREATE), jsonHeaders(AUTH));
    if (created.status !== 202) throw new Error(`setup: ${created.status} ${created.text}`);
    id = created.json.id;
    await eventually(async () => (await tb.request('GET', `/v1/sandboxes/${id}`, undefined, AUTH)).json.status.state === 'Running', 120_000, 'the sandbox running');
    t = fuzzTarget(tb.url, report, 'opensandbox', async () => {
      const h = (await tb.get('/health')).json;
      const list = (await tb.request('GET', '/v1/sandboxes?pageSize=100', undefined, AUTH)).json;
      const snapshots = (await tb.request('GET', '/v1/snapshots?pageSize=100', undefined, AUTH)).json;
      return { pools: h.pools, sandboxes: list, snapshots };
    });
  });
  afterAll(() => endFuzz(report, t, tb));

  const send = (route: string, method: string, path: string, body?: string | Buffer, headers = jsonHeaders(AUTH)) => refused(t, route, { method, path, body, headers });

  it('create: a body broken in one field, with unknown fields, or no JSON object: a 4xx, nothing created', async () => {
    const domain = fc.constantFrom(
      { ...VALID_CREATE, resourceLimits: { cpu: 'lots' } },
      { ...VALID_CREATE, resourceLimits: { memory: '-1Gi' } },
      { ...VALID_CREATE, resourceLimits: { cpu: '1e99' } },
      { ...VALID_CREATE, resourceLimits: { gpu: '1' } },
      { ...VALID_CREATE, env: { '1BAD': 'x' } },
      { ...VALID_CREATE, env: { 'A-B': 'x' } },
      { ...VALID_CREATE, env: { A: 'a\u0000b' } },
      { ...VALID_CREATE, platform: { os: 'windows', arch: 'amd64' } },
      { ...VALID_CREATE, platform: { os: 'linux', arch: 's390x' } },
      { ...VALID_CREATE, image: { uri: '   ' } },
      { ...VALID_CREATE, extensions: { poolRef: 'no-such-pool' } },
      { ...VALID_CREATE, secureAccess: 'yes' },
      { ...VALID_CREATE, metadata: { '': 'x' } },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(invalidBody(CREATE, VALID_CREATE), domain.map((b) => JSON.stringify(b))), (body) => send('POST /v1/sandboxes', 'POST', '/v1/sandboxes', body).then(() => undefined)),
      fuzzParams(RUNS * 2),
    );
  });

  it('list: bad states, pages, page sizes and metadata filters: a 400', async () => {
    const bad = fc.oneof(fc.constantFrom('0', '-1', 'x', '1.5', '99999999999999999999'), nastyUrlText.filter((s) => !/^\d+$/.test(s) && s !== ''));
    const queries = fc.oneof(
      fc.tuple(fc.constantFrom('page', 'pageSize'), bad).map(([k, v]) => `${k}=${v}`),
      fc.constant('pageSize=1001'),
      fc.oneof(fc.constantFrom('Runnin', 'running ', 'Deleted', '*'), nastyUrlText.filter((s) => s !== '')).map((s) => `state=${s}`),
      fc.constantFrom('metadata=%3Dx', 'metadata=%3D', 'metadata=a%3D1%26%3Db'),
    );
    await fc.assert(fc.asyncProperty(queries, (q) => send('GET /v1/sandboxes (query)', 'GET', `/v1/sandboxes?${q}`).then(() => undefined)), fuzzParams(RUNS));
  });

  it('snapshots: a bad snapshot body, list query or snapshot id: a 4xx, nothing taken', async () => {
    const body = fc.oneof(
      junkBody,
      invalidBody({ type: 'object', properties: { name: { type: 'string', minLength: 1, maxLength: 256 } }, additionalProperties: false }, { name: 'x' }),
      fc.constantFrom('{"name":""}', '{"name":"a\\u0000b"}', `{"name":"${'n'.repeat(257)}"}`, '{"ttl":5}'),
    );
    const bad = fc.oneof(fc.constantFrom('0', '-1', 'x', '1.5', '99999999999999999999'), nastyUrlText.filter((s) => !/^\d+$/.test(s) && s !== ''));
    const query = fc.oneof(
      fc.tuple(fc.constantFrom('page', 'pageSize'), bad).map(([k, v]) => `${k}=${v}`),
      fc.constant('pageSize=1001'),
      fc.oneof(fc.constantFrom('ready', 'Running', 'Deleted', '*'), nastyUrlText.filter((s) => s !== '')).map((s) => `state=${s}`),
    );
    // A well-formed id is looked up only where snapshots are served (elsewhere: the declared 501).
    const wellFormed = tb.broker.snapshots.served ? ['snap-0000000000000000'] : [];
    const unknownId = fc.oneof(badSegment, fc.constantFrom(...wellFormed, 'snap_123', 'SNAP-0123456789ABCDEF'));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          body.map((b) => ['POST /v1/sandboxes/:id/snapshots', 'POST', `/v1/sandboxes/${id}/snapshots`, b] as const),
          query.map((q) => ['GET /v1/snapshots (query)', 'GET', `/v1/snapshots?${q}`, undefined] as const),
          unknownId.chain((s) => fc.constantFrom('GET', 'DELETE').map((m) => [`${m} /v1/snapshots/:snapshotId (unknown)`, m, `/v1/snapshots/${s}`, undefined] as const)),
        ),
        ([route, method, path, b]) => send(route, method, path, b).then(() => undefined),
      ),
      fuzzParams(RUNS * 2),
    );
  });

  it('metadata patch and renew of the running sandbox: a refused body changes neither its metadata nor its expiry', async () => {
    const patch = fc.oneof(
      junkBody,
      fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), fc.oneof(fc.integer(), fc.boolean(), fc.constant([]), fc.constant({}), nastyOrHugeText.filter((s) => !/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(s) || s.length > 63)), { minKeys: 1, maxKeys: 3 }).map((o) => JSON.stringify(o)),
      fc.constantFrom('{"opensandbox.io/owner":"x"}', `{"a":"${'b'.repeat(64)}"}`, '{"":"x"}'),
    );
    const renew = fc.oneof(
      junkBody,
      invalidBody({ type: 'object', properties: { expiresAt: { type: 'string' } }, required: ['expiresAt'], additionalProperties: false }, { expiresAt: '2099-01-01T00:00:00Z' }),
      fc.oneof(fc.constantFrom('tomorrow', '2025-13-01T00:00:00Z', '2025-01-01', '2025-01-01T00:00:00', '1e12', '2025-02-30T25:61:61Z'), nastyOrHugeText).map((at) => JSON.stringify({ expiresAt: at })),
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(patch.map((b) => ['PATCH', 'metadata', b] as const), renew.map((b) => ['POST', 'renew-expiration', b] as const)), ([method, route, body]) =>
        send(`${method} /v1/sandboxes/:id/${route}`, method, `/v1/sandboxes/${id}/${route}`, body).then(() => undefined),
      ),
      fuzzParams(RUNS * 2),
    );
  });

  it('an empty metadata key, in a create or a patch: a 400 (no list filter could name it)', async () => {
    const created = await send('POST /v1/sandboxes', 'POST', '/v1/sandboxes', JSON.stringify({ ...VALID_CREATE, metadata: { '': 'x' } }));
    const patched = await send('PATCH /v1/sandboxes/:id/metadata', 'PATCH', `/v1/sandboxes/${id}/metadata`, '{"":"x"}');
    for (const res of [created, patched]) expect([res.status, res.json]).toEqual([400, { code: 'INVALID_REQUEST_BODY', message: "metadata key '': a key must not be empty" }]);
  });

  it("endpoints: a port that is none, on the running sandbox: a 400", async () => {
    const ports = fc.oneof(fc.constantFrom('0', '-1', '65536', 'x', '1.5', '99999999999999999999', '%20'), fc.integer({ min: 65_536, max: 2 ** 40 }).map(String));
    await fc.assert(fc.asyncProperty(ports, (port) => send('GET /v1/sandboxes/:id/endpoints/:port', 'GET', `/v1/sandboxes/${id}/endpoints/${port}`).then(() => undefined)), fuzzParams(RUNS));
  });

  it('every route with an id no sandbox has: a 404, nothing touched', async () => {
    const routes = fc.constantFrom(...idRoutes(LIFECYCLE_CONTRACT.routes, '/v1/sandboxes', { patchMetadata: '{"a":"b"}', renew: '{"expiresAt":"2099-01-01T00:00:00Z"}' }, { port: '8080' }));
    await fc.assert(
      fc.asyncProperty(badSegment, routes, async (bad, r) => {
        fc.pre(bad !== id);
        await send(`${r.method} /v1/sandboxes/:id${r.tail} (unknown id)`, r.method, `/v1/sandboxes/${bad}${r.tail}`, r.body);
      }),
      fuzzParams(RUNS),
    );
  });

  it('a body past BROKER_MAX_BODY_BYTES, and any route without the token: 413 and 401', async () => {
    const routes = fc.constantFrom(
      { method: 'POST', path: () => '/v1/sandboxes', body: JSON.stringify(VALID_CREATE) },
      { method: 'PATCH', path: () => `/v1/sandboxes/${id}/metadata`, body: '{"a":"b"}' },
      { method: 'POST', path: () => `/v1/sandboxes/${id}/renew-expiration`, body: '{"expiresAt":"2099-01-01T00:00:00Z"}' },
      { method: 'DELETE', path: () => `/v1/sandboxes/${id}`, body: undefined },
      { method: 'GET', path: () => '/v1/sandboxes', body: undefined },
    );
    await fc.assert(
      fc.asyncProperty(routes, fc.boolean(), fc.integer({ min: MAX_BODY_BYTES + 1, max: MAX_BODY_BYTES * 3 }), async (r, huge, size) => {
        const withBody = huge && r.body !== undefined;
        const body = withBody ? `{"metadata":{"a":"${'x'.repeat(size)}"}}` : r.body;
        const res = await send(`${r.method} ${r.path().replace(id, ':id')} (${withBody ? 'huge body' : 'no token'})`, r.method, r.path(), body, jsonHeaders(withBody ? AUTH : {}));
        expect(res.status).toBe(withBody ? 413 : 401);
      }),
      fuzzParams(RUNS),
    );
  });

  it('every string of every route with a name or a path too long, a NUL byte or `..`: nothing is a 5xx but a declared 501, a refusal changes nothing', async () => {
    // A create of another image than the warm pool's (whose one session the running sandbox holds): a dedicated one, made at once.
    const dedicated = testBackend === 'docker' ? (warmImage.startsWith('bash-broker-sandbox') ? 'bash-broker-test:latest' : 'bash-broker-sandbox:latest') : 'fuzz-dedicated:1';
    const bodies: Record<string, unknown> = { create: { ...VALID_CREATE, image: { uri: dedicated } } };
    const cases = hostileCases(LIFECYCLE_CONTRACT, AUTH, (name) => ({ params: { id, port: '8080', snapshotId: 'snap', name: 'cred', path: 'x' }, body: bodies[name] }));
    const rest = await t.snapshot();
    await everyHostileCase(t, cases, {
      // A sandbox a string made (an entrypoint or env value is any text): deleted, and the pools at rest again.
      settle: async (_c, res) => {
        const made = res.status === 202 && typeof res.json?.id === 'string' && res.json.id !== id ? (res.json.id as string) : null;
        if (made === null) return;
        expect((await tb.request('DELETE', `/v1/sandboxes/${made}`, undefined, AUTH)).status).toBeLessThan(300);
        await eventually(async () => JSON.stringify((await t.snapshot()).pools) === JSON.stringify(rest.pools) && !JSON.stringify((await t.snapshot()).sandboxes).includes(made), 120_000, 'the made sandbox gone');
      },
      usable: async () => expect((await tb.request('GET', `/v1/sandboxes/${id}`, undefined, AUTH)).json.status.state).toBe('Running'),
    });
  });
});
