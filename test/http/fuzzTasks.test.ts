/**
 * Task sandboxes fuzzed (Docker only: on the local backend their routes answer 501), with
 * BROKER_TOKEN set, from their declared routes (taskContract.ts, with the checks taskInput.ts
 * adds): create and prompt bodies broken in one field, with unknown fields, or no JSON object; bad
 * stream cursors (query and Last-Event-ID); ids no task has on every route; bodies past
 * BROKER_MAX_BODY_BYTES and no token; and a stream reconnected with a cursor from the future, which
 * replays nothing. Every answer is a 4xx in the pool format's `{detail, code}`, within a bound; the
 * task's record, the task containers and the pool are the same after each case as before. Every
 * string of every route gets a name and a path too long, a NUL byte and `..` (hostileStrings.ts).
 *
 * Task sandboxes are Docker's alone:
 * @backend docker
 */
import fc from 'fast-check';
import { request } from 'undici';
import { testBackend, type TestBroker } from '../helpers/broker';
import { taskFixture, type TaskFixture } from '../helpers/taskSuite';
import { SseReader } from '../../devtools/taskStreams';
import { apiDocOf } from '../../src/http/contract';
import { TASK_CONTRACT } from '../../src/api/tasks/taskContract';
import { badSegment, declaredBody, idRoutes, invalidBody, nastyUrlText, notJsonBody, type Schema } from '../helpers/fuzzInputs';
import { endFuzz, FuzzReport, fuzzParams, fuzzTarget, jsonHeaders, refused, type FuzzTarget } from '../helpers/fuzzHarness';
import { everyHostileCase, hostileCases } from '../helpers/hostileStrings';

const TASK_API_DOC = apiDocOf(TASK_CONTRACT);

const RUNS = 15;
const TOKEN = 'fuzz-tasks-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MAX_BODY_BYTES = 64 * 1024;
const REPO = 'acme/demo-repo';

const bodyOf = (key: string): Schema => declaredBody(TASK_API_DOC, key);
const CREATE = bodyOf('POST /sandboxes');
/** taskInput.ts reads a prompt's message and ignores any other field. */
const PROMPT: Schema = { ...bodyOf('POST /sandboxes/:id/prompt'), additionalProperties: true };

const suite = testBackend === 'docker' ? describe : describe.skip;
if (testBackend !== 'docker') console.warn(`*** TASK FUZZ SKIPPED: task sandboxes need Docker; backend ${testBackend} ***`);

interface TaskState {
  health: unknown;
  record: unknown;
  tasks: unknown;
  modelCalls: number;
  containers: unknown;
}

suite('task sandboxes fuzzed (docker)', () => {
  let fx: TaskFixture;
  let tb: TestBroker;
  let id: string;
  let t: FuzzTarget<TaskState>;
  const report = new FuzzReport('tasks-docker');

  beforeAll(async () => {
    fx = await taskFixture('fuzz');
    // One task at most: the suite's own. A create its checks take is then refused for capacity, and starts nothing.
    tb = await fx.startBroker({ BROKER_TOKEN: TOKEN, BROKER_MAX_BODY_BYTES: String(MAX_BODY_BYTES), BROKER_TASK_KEEPALIVE: '1', BROKER_TASK_MAX_SANDBOXES: '1' });
    // One turn, to its end: after it the task is idle, and a refused request could only change that by starting one.
    const created = await tb.post('/sandboxes', { repo: REPO, prompt: 'hello' }, AUTH);
    if (created.status !== 201) throw new Error(`setup: ${created.status} ${created.text}`);
    id = created.json.id;
    const coding = await SseReader.open(`${tb.url}/sandboxes/${id}/stream/coding`, AUTH);
    await coding.untilType('turn_end');
    await coding.close();
    t = fuzzTarget(tb.url, report, 'pool', async () => {
      const h = (await tb.get('/health')).json;
      const record = (await tb.request('GET', `/sandboxes/${id}`, undefined, AUTH)).json;
      const containers = (await fx.containers()).map((c) => [c.Id, c.State]);
      // A turn started would call the model: the stub's calls stand for the agent's work.
      return { health: [h.total_sessions, h.in_use_sessions, h.available_sessions], record, tasks: tb.broker.directory.list('task').map((s) => [s.id, s.describe?.()]), containers, modelCalls: fx.stub.requests.length };
    });
  }, 300_000);
  afterAll(async () => {
    await endFuzz(report, t, tb);
    await fx?.close();
  }, 120_000);

  it('create and prompt: every body their schema refuses is a 4xx, no task made, no turn started', async () => {
    const cases = fc.oneof(
      fc.oneof(invalidBody(CREATE, { repo: REPO }), fc.constantFrom('{"repo":"acme/.."}', '{"repo":"../etc"}', '{"repo":"acme/demo-repo/x"}', '{"repo":"/acme/demo"}')).map((body) => ['/sandboxes', 'POST /sandboxes', body] as const),
      invalidBody(PROMPT, { message: 'hello' }).map((body) => [`/sandboxes/${id}/prompt`, 'POST /sandboxes/:id/prompt', body] as const),
    );
    await fc.assert(fc.asyncProperty(cases, ([path, route, body]) => refused(t, route, { method: 'POST', path, body, headers: jsonHeaders(AUTH) }).then(() => undefined)), fuzzParams(RUNS * 3));
  });

  it('streams with a bad cursor (query or Last-Event-ID): a 400', async () => {
    const bad = fc.oneof(fc.constantFrom('-1', 'x', '1.5', '1e3', '9999999999999999', ''), nastyUrlText.filter((s) => !/^\d{1,15}$/.test(decodeURIComponent(s).trim())));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('control', 'coding'), bad, fc.boolean(), async (stream, cursor, asHeader) => {
        const headers: Record<string, string> = asHeader ? { ...AUTH, 'last-event-id': decodeURIComponent(cursor).replace(/[^\x20-\x7e]/g, '?') } : AUTH;
        fc.pre(!asHeader || !/^\d{1,15}$/.test(headers['last-event-id'].trim()));
        await refused(t, `GET /sandboxes/:id/stream/${stream} (${asHeader ? 'Last-Event-ID' : 'cursor'})`, { method: 'GET', path: `/sandboxes/${id}/stream/${stream}${asHeader ? '' : `?cursor=${cursor}`}`, headers });
      }),
      fuzzParams(RUNS * 2),
    );
  });

  it('every route with an id no task has, a body past BROKER_MAX_BODY_BYTES, no token: 404, 413, 401', async () => {
    const routes = fc.constantFrom(...idRoutes(TASK_CONTRACT.routes, '/sandboxes', { prompt: '{"message":"hello"}' }));
    const cases = fc.oneof(
      fc.tuple(badSegment, routes).map(([bad, r]) => ({ ...r, path: `/sandboxes/${bad}${r.tail}`, headers: AUTH, expect: [400, 404], route: `${r.method} /sandboxes/:id${r.tail} (unknown id)` })),
      routes.map((r) => ({ ...r, path: `/sandboxes/${id}${r.tail}`, headers: {}, expect: [401], route: `${r.method} /sandboxes/:id${r.tail} (no token)` })),
      fc.integer({ min: MAX_BODY_BYTES + 1, max: MAX_BODY_BYTES * 3 }).map((n) => ({ method: 'POST', path: '/sandboxes', body: `{"repo":"${REPO}","prompt":"${'p'.repeat(n)}"}`, headers: AUTH, expect: [413], route: 'POST /sandboxes (huge body)' })),
      // Deep nesting can pass the limit: the size is refused first (413), a body within it for not being JSON (400).
      notJsonBody.map((body) => ({ method: 'POST', path: `/sandboxes/${id}/prompt`, body, headers: AUTH, expect: [Buffer.byteLength(body) > MAX_BODY_BYTES ? 413 : 400], route: 'POST /sandboxes/:id/prompt (no JSON)' })),
    );
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        fc.pre(!c.path.startsWith(`/sandboxes/${id}`) || c.expect[0] !== 404);
        const res = await refused(t, c.route, { method: c.method, path: c.path, body: c.body, headers: jsonHeaders(c.headers) });
        expect(c.expect).toContain(res.status);
      }),
      fuzzParams(RUNS * 2),
    );
  });

  it('a stream reconnected with a cursor from the future: nothing replayed before the first keep-alive', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('control', 'coding'), fc.integer({ min: 1_000, max: 999_999_999_999_999 }), fc.boolean(), async (stream, cursor, asHeader) => {
        const before = await t.snapshot();
        const res = await request(`${tb.url}/sandboxes/${id}/stream/${stream}${asHeader ? '' : `?cursor=${cursor}`}`, { headers: asHeader ? { ...AUTH, 'last-event-id': String(cursor) } : AUTH, signal: AbortSignal.timeout(30_000) });
        report.count(`GET /sandboxes/:id/stream/${stream} (cursor from the future)`, res.statusCode);
        expect(res.statusCode).toBe(200);
        let text = '';
        for await (const chunk of res.body) {
          text += (chunk as Buffer).toString();
          if (text.includes(': keep-alive')) break;
        }
        res.body.destroy();
        // A replay is written before anything else: what came before the first keep-alive is all of it.
        expect(text.slice(0, text.indexOf(': keep-alive'))).not.toMatch(/^data:/m);
        expect(await t.snapshot()).toEqual(before);
      }),
      fuzzParams(Math.ceil(RUNS / 3)),
    );
  });

  it('every string of every route with a name or a path too long, a NUL byte or `..`: nothing is a 5xx, a refusal changes nothing', async () => {
    const bodies: Record<string, unknown> = { create: { repo: REPO }, prompt: { message: 'hello' } };
    const cases = hostileCases(TASK_CONTRACT, AUTH, (name) => ({ params: { id }, body: bodies[name] }));
    await everyHostileCase(t, cases, {
      // A create its checks take meets the cap of one task (BROKER_TASK_MAX_SANDBOXES): a 503 that starts nothing.
      refusedAnyway: (res) => res.status === 503 && res.json?.code === 'too_many_sandboxes',
      // A turn a message started is waited for to its end.
      settle: async (c, _res, before) => {
        if (c.route.path.endsWith('/prompt')) {
          const coding = await SseReader.open(`${tb.url}/sandboxes/${id}/stream/coding?cursor=${(before.record as { cursors: { coding: number } }).cursors.coding}`, AUTH);
          await coding.untilType('turn_end');
          await coding.close();
        }
      },
      usable: async () => expect((await tb.request('GET', `/sandboxes/${id}`, undefined, AUTH)).json.status).toBe('running'),
    });
  });
});
