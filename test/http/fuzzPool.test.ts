/**
 * The pool API and its rollout routes, fuzzed from their contract (poolContract.ts): every route gets
 * bodies its schema refuses (a wrong type, a missing field, a value past a bound, NUL, a command past
 * BROKER_MAX_COMMAND_BYTES, extra fields beside them), bodies that are no JSON object, a body past
 * BROKER_MAX_BODY_BYTES, ids no lease has, and requests without the token. Every answer is a 4xx in
 * the pool API's `{detail, code}`, within a bound, and the pool's counts, the held lease's history and
 * its working directory are the same after each case as before. Every string of every route gets a
 * name and a path too long, a NUL byte and `..` (hostileStrings.ts). The cases and 5xx per route are
 * printed and written as a report.
 *
 * The refusals are the contract's, made before any backend sees the request:
 * @backend any
 */
import fc from 'fast-check';
import { eventually, startTestBroker, testBackend, type TestBroker } from '../helpers/broker';
import { acquireBody, acquireGroupBody, executeBody, POOL_CONTRACT } from '../../src/api/pool/poolContract';
import { badSegment, idRoutes, invalidBody, publishedSchema, nastyText, notJsonBody } from '../helpers/fuzzInputs';
import { FuzzReport, endFuzz, fuzzTarget, fuzzParams, jsonHeaders, refused, type FuzzTarget } from '../helpers/fuzzHarness';
import { everyHostileCase, hostileCases } from '../helpers/hostileStrings';

const RUNS = 60;
const TOKEN = 'fuzz-pool-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MAX_BODY_BYTES = 64 * 1024;
const LIMITS = { defaultTimeoutSeconds: 30, maxTimeoutSeconds: 60, maxCommandBytes: 2048 };

interface PoolState {
  health: unknown;
  history: unknown;
  files: unknown;
}

describe(`the pool API fuzzed from its contract (${testBackend})`, () => {
  let tb: TestBroker;
  let held: string;
  let t: FuzzTarget<PoolState>;
  const report = new FuzzReport(`pool-${testBackend}`);

  beforeAll(async () => {
    tb = await startTestBroker({
      BROKER_TOKEN: TOKEN,
      BROKER_MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      BROKER_MAX_COMMAND_BYTES: String(LIMITS.maxCommandBytes),
      BROKER_MAX_COMMAND_TIMEOUT: String(LIMITS.maxTimeoutSeconds),
    });
    const acquired = await tb.post('/session/acquire', {}, AUTH);
    held = acquired.json.session_id;
    // Something in its history and its directory, for the snapshots to hold.
    expect((await tb.post(`/session/${held}/execute`, { command: 'mkdir -p d; echo kept > d/f.txt; echo ok' }, AUTH)).json.stdout).toBe('ok\n');
    t = fuzzTarget(tb.url, report, 'pool', async () => {
      const h = (await tb.get('/health')).json;
      const { total_sessions, available_sessions, in_use_sessions, broken_sessions, cleaning_sessions } = h;
      const history = (await tb.request('GET', `/session/${held}/history`, undefined, AUTH)).json;
      const files = (await tb.request('GET', `/sandboxes/${held}/execd/directories/list?path=.&depth=3`, undefined, AUTH)).json;
      return { health: { total_sessions, available_sessions, in_use_sessions, broken_sessions, cleaning_sessions }, history, files };
    });
  });
  afterAll(() => endFuzz(report, t, tb));

  const post = (route: string, path: string, body: string | Buffer | undefined, headers = jsonHeaders(AUTH)) => refused(t, route, { method: 'POST', path, body, headers });
  const bodyFor = (schema: unknown) => invalidBody(publishedSchema(schema));

  it('acquire: every body its contract refuses is a 400/413 and leases nothing', async () => {
    await fc.assert(fc.asyncProperty(bodyFor(acquireBody(LIMITS)), (body) => post('POST /session/acquire', '/session/acquire', body).then(() => undefined)), fuzzParams(RUNS));
  });

  it('acquire_group: every body its contract refuses leases nothing', async () => {
    await fc.assert(fc.asyncProperty(bodyFor(acquireGroupBody()), (body) => post('POST /session/acquire_group', '/session/acquire_group', body).then(() => undefined)), fuzzParams(RUNS));
  });

  it("execute on the held lease: every body its contract refuses is refused, nothing runs, the lease's history is the same", async () => {
    await fc.assert(
      fc.asyncProperty(bodyFor(executeBody(LIMITS)), (body) => post('POST /session/:sessionId/execute', `/session/${held}/execute`, body).then(() => undefined)),
      fuzzParams(RUNS),
    );
    expect((await tb.post(`/session/${held}/execute`, { command: 'cat d/f.txt' }, AUTH)).json.stdout).toBe('kept\n');
  });

  it('release and heartbeat of the held lease with a body that is no JSON: refused, the lease kept', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('release', 'heartbeat'), notJsonBody, (route, body) =>
        post(`POST /session/:sessionId/${route}`, `/session/${held}/${route}`, body).then(() => undefined),
      ),
      fuzzParams(RUNS),
    );
  });

  it('every route with an id no lease has: a 404 (or 400), nothing touched', async () => {
    const routes = fc.constantFrom(...idRoutes(POOL_CONTRACT.routes, '/session', { execute: '{"command":"true"}', network: '{"policy":"none"}' }, {}, 'sessionId'));
    await fc.assert(
      fc.asyncProperty(badSegment, routes, async (id, r) => {
        fc.pre(id !== held);
        await refused(t, `${r.method} /session/:sessionId${r.tail} (unknown id)`, { method: r.method, path: `/session/${id}${r.tail}`, body: r.body, headers: jsonHeaders(AUTH) });
      }),
      fuzzParams(RUNS),
    );
  });

  it('a body past BROKER_MAX_BODY_BYTES on every body route: 413, nothing touched', async () => {
    const paths = fc.constantFrom('/session/acquire', '/session/acquire_group', () => `/session/${held}/execute`, () => `/session/${held}/release`, () => `/session/${held}/heartbeat`);
    await fc.assert(
      fc.asyncProperty(paths, fc.integer({ min: MAX_BODY_BYTES + 1, max: MAX_BODY_BYTES * 4 }), fc.constantFrom('{"command":"', '{"files":{"a":"', ' '), async (p, size, head) => {
        const path = typeof p === 'function' ? p() : p;
        const body = head + 'A'.repeat(size);
        const res = await post(`POST ${path.replace(held, ':sessionId')} (huge body)`, path, body);
        expect(res.status).toBe(413);
      }),
      fuzzParams(Math.ceil(RUNS / 4)),
    );
  });

  it('any route without the token, or with a wrong one: 401, nothing touched', async () => {
    const routes = fc.constantFrom('/session/acquire', '/session/acquire_group', `/session/${'0'.repeat(32)}/execute`, '/metrics');
    const auth = fc.oneof(
      fc.constant({}),
      fc.constantFrom('Bearer', 'Bearer ', `Bearer ${TOKEN}x`, `Basic ${TOKEN}`, `bearer  ${TOKEN.toUpperCase()}`, TOKEN).map((a) => ({ authorization: a })),
      nastyText.map((s) => ({ 'x-execd-access-token': s.replace(/[^\x21-\x7e]/g, '') || 'x' })),
    );
    await fc.assert(
      fc.asyncProperty(routes, auth, async (path, headers) => {
        const method = path === '/metrics' ? 'GET' : 'POST';
        const res = await refused(t, `${method} ${path.replace(/0{32}/, ':sessionId')} (no token)`, { method, path, body: method === 'POST' ? '{}' : undefined, headers: jsonHeaders(headers) });
        expect(res.status).toBe(401);
      }),
      fuzzParams(Math.ceil(RUNS / 2)),
    );
  });

  it('every string of every route with a name or a path too long, a NUL byte or `..`: a file path refuses them, nothing is a 5xx, a refusal changes nothing', async () => {
    // release ends the held lease when taken: its only string is the lease's id, which a case never keeps.
    const cases = hostileCases(POOL_CONTRACT, AUTH, () => ({ params: { sessionId: held } }));
    await everyHostileCase(t, cases, {
      // A command is any text (a `..` runs as one); an acquire taken leases sessions: released again.
      settle: async (_c, res) => {
        for (const id of [res.json?.session_id, ...(res.json?.sessions ?? []).map((s: { session_id: string }) => s.session_id)]) {
          if (typeof id === 'string' && id !== held) expect((await tb.post(`/session/${id}/release`, {}, AUTH)).status).toBe(200);
        }
        // At rest again (the released sessions cleaned) before the next case's snapshot.
        await eventually(async () => ((h) => h.in_use_sessions === 1 && h.cleaning_sessions === 0)((await tb.get('/health')).json), 30_000, 'the released sessions cleaned');
      },
      usable: async () => expect((await tb.post(`/session/${held}/execute`, { command: 'cat d/f.txt' }, AUTH)).json.stdout).toBe('kept\n'),
    });
  });
});
