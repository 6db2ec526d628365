/**
 * Sandbox groups fuzzed (Docker only: on the local backend their routes answer 501), with
 * BROKER_TOKEN set, from their declared routes (groupContract.ts, with the checks
 * groupInput.ts adds): group and sandbox start and stop bodies broken in one field or that are no
 * JSON object; each sandbox's own port without the token (401) and with bodies its actions refuse;
 * the database socket of a read attachment written to (403), and its bodies refused. Every answer is
 * a 4xx in the pool format's `{detail, code}`, within a bound; the group's sandboxes, the pool and
 * the database's documents are the same after each case as before. A small run count: every case
 * of a running group is cheap, but the group itself is not. Every string of every route gets a name
 * and a path too long, a NUL byte and `..` (hostileStrings.ts): a tool's or population file's path
 * refuses them, nothing is a 5xx.
 *
 * Sandbox groups are Docker's alone:
 * @backend docker
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { startTestBroker, testBackend, testDeployment, type TestBroker } from '../helpers/broker';
import { apiDocOf } from '../../src/http/contract';
import { GROUP_CONTRACT } from '../../src/api/groups/groupContract';
import { groupBrokerEnv, groupDirOf, makeGroupFixtures, type GroupFixtures } from '../helpers/groupFixtures';
import { declaredBody, invalidBody, junkBody, nastyText, notJsonBody, type Schema } from '../helpers/fuzzInputs';
import { endFuzz, FuzzReport, fuzzParams, fuzzTarget, jsonHeaders, refused, type FuzzTarget } from '../helpers/fuzzHarness';
import { everyHostileCase, hostileCases } from '../helpers/hostileStrings';

const GROUP_API_DOC = apiDocOf(GROUP_CONTRACT);

const RUNS = 15;
const TOKEN = 'fuzz-groups-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const root = process.getuid?.() === 0;
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';
const DB = { database_type: 'vector', access_type: 'read_write', namespaces: ['default', 'other'] };

const bodyOf = (key: string): Schema => declaredBody(GROUP_API_DOC, key);
const SANDBOX_START = bodyOf('POST /sandbox/start');
const VALID_SANDBOX = { id: 'fuzzed', compute_resources: { cpu_cores: 0.25, ram_gb: 0.125, disk_gb: 0.05 } };

const onDocker = testBackend === 'docker' && (root || ci);
const suite = onDocker ? describe : describe.skip;
if (!onDocker) console.warn(`*** GROUP FUZZ SKIPPED: sandbox groups need Docker and root (loop-mounted disks); backend ${testBackend} ***`);

interface GroupState {
  health: unknown;
  groups: unknown;
  documents: unknown;
}

suite('sandbox groups fuzzed (docker)', () => {
  let tb: TestBroker;
  let fx: GroupFixtures;
  const urls: Record<string, string> = {};
  /** The read attachment's socket on this host, and its token. */
  let readerSocket: string;
  let readerToken: string;
  let writerSocket: string;
  let writerToken: string;
  let writerDb: Agent;
  let t: FuzzTarget<GroupState>;
  const report = new FuzzReport('groups-docker');

  async function sandboxCall(url: string, method: string, p: string, body?: unknown, headers: Record<string, string> = AUTH): Promise<{ status: number; json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const res = await request(url + p, { method: method as 'GET', body: body === undefined ? undefined : JSON.stringify(body), headers: jsonHeaders(headers) });
    const text = await res.body.text();
    return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
  }

  async function shell(url: string, command: string): Promise<string> {
    const r = await sandboxCall(url, 'POST', '/execute', { actions: { bash: { args: { command } } } });
    const o = r.json?.observations?.[0];
    if (r.status !== 200 || o?.terminal_still_running !== false) throw new Error(`${command}: ${r.status} ${JSON.stringify(r.json)}`);
    return o.stdout as string;
  }

  /** Every document of the namespace, through the writer's socket. */
  async function documents(): Promise<unknown> {
    const res = await request(`http://db/namespaces/default/query`, {
      method: 'POST',
      body: JSON.stringify({ embedding: [0, 0, 1], k: 1000 }),
      headers: jsonHeaders({ authorization: `Bearer ${writerToken}` }),
      dispatcher: writerDb,
    });
    return res.body.json();
  }

  beforeAll(async () => {
    fx = makeGroupFixtures('bkr-groups-fuzz');
    const groupDir = groupDirOf(fx);
    tb = await startTestBroker(groupBrokerEnv(fx, testDeployment(`fuzz-groups-${process.pid}`), { BROKER_TOKEN: TOKEN }));
    const started = await tb.post('/group/start', { database_access: DB, initial_database_population_config: fx.population }, AUTH);
    if (started.status !== 200) throw new Error(`group start: ${started.text}`);
    for (const [id, access] of [['writer', 'read_write'], ['reader', 'read']]) {
      const s = await tb.post('/sandbox/start', { id, compute_resources: VALID_SANDBOX.compute_resources, attached_databases: { vector_db: { ...DB, access_type: access, namespaces: ['default'] } } }, AUTH);
      if (s.status !== 200) throw new Error(`sandbox start ${id}: ${s.text}`);
      urls[id] = s.json.sandbox_url;
    }
    const sockets = (fs.readdirSync(groupDir, { recursive: true }) as string[]).filter((f) => f.endsWith('.sock'));
    const socketOf = (id: string): string => path.join(groupDir, sockets.find((f) => f.includes(`${path.sep}${id}${path.sep}`))!);
    [readerSocket, writerSocket] = [socketOf('reader'), socketOf('writer')];
    readerToken = (await shell(urls.reader, 'echo $VECTOR_DB_TOKEN')).trim();
    writerToken = (await shell(urls.writer, 'echo $VECTOR_DB_TOKEN')).trim();
    writerDb = new Agent({ connect: { socketPath: writerSocket } });
    t = fuzzTarget(tb.url, report, 'pool', async () => {
      const h = (await tb.get('/health')).json;
      return { health: [h.total_sessions, h.in_use_sessions, h.available_sessions], groups: tb.broker.groups.list(), documents: await documents() };
    });
  }, 300_000);
  afterAll(async () => {
    await tb?.post('/group/stop', {}, AUTH).catch(() => undefined);
    await endFuzz(report, t, tb);
    await writerDb?.close();
    fx?.remove();
  }, 120_000);

  it('group start, sandbox start and stop: every body their schema refuses is a 4xx, nothing started or stopped', async () => {
    const cases = fc.oneof(
      invalidBody(bodyOf('POST /group/start')).map((body) => ['/group/start', body] as const),
      invalidBody(SANDBOX_START, VALID_SANDBOX).map((body) => ['/sandbox/start', body] as const),
      // groupInput.ts reads a stop's id and ignores any other field; an id no sandbox has, so nothing can stop
      invalidBody({ ...bodyOf('POST /sandbox/stop'), additionalProperties: true }, { id: 'nosuch' }).map((body) => ['/sandbox/stop', body] as const),
      notJsonBody.map((body) => ['/group/stop', body] as const),
    );
    await fc.assert(fc.asyncProperty(cases, ([route, body]) => refused(t, `POST ${route}`, { method: 'POST', path: route, body, headers: jsonHeaders(AUTH) }).then(() => undefined)), fuzzParams(RUNS * 3));
  });

  it("each sandbox's own port: 401 without the token, a 4xx for actions and input it refuses", async () => {
    // An action whose args its tool refuses (`{"command":1}`) is not a refused request: it runs, and its
    // observation says why it failed (200). Only a body that names no actions is refused.
    const badActions = fc.oneof(
      junkBody,
      fc.constantFrom('{}', '{"actions":1}', '{"actions":"bash"}', '{"actions":[{"args":{}}]}', '{"actions":{"bash":1}}', '{"actions":[1]}'),
    );
    const cases = fc.oneof(
      fc.constantFrom('/execute', '/input', '/output').map((p) => ({ p, body: p === '/output' ? undefined : '{"text":"echo ran > /workspace/ran\\r"}', headers: {} as Record<string, string>, expect: 401 })),
      fc.constantFrom<Record<string, string>>({ authorization: `Bearer ${TOKEN}x` }, { authorization: 'Bearer' }, { 'x-execd-access-token': 'nope' }).map((headers) => ({ p: '/execute', body: '{"actions":{"bash":{"args":{"command":"echo ran > /workspace/ran"}}}}', headers, expect: 401 })),
      badActions.map((body) => ({ p: '/execute', body, headers: AUTH, expect: 400 })),
      fc.oneof(junkBody, fc.constantFrom('{}', '{"text":1}', '{"text":null}', '{"text":["x"]}')).map((body) => ({ p: '/input', body, headers: AUTH, expect: 400 })),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('writer', 'reader'), cases, async (id, c) => {
        const res = await refused(t, `${c.body === undefined ? 'GET' : 'POST'} <sandbox_url>${c.p}${c.expect === 401 ? ' (no token)' : ''}`, {
          method: c.body === undefined ? 'GET' : 'POST',
          path: '',
          body: c.body,
          headers: jsonHeaders(c.headers),
          url: urls[id] + c.p,
        });
        if (c.expect === 401) expect(res.status).toBe(401);
      }),
      fuzzParams(RUNS * 2),
    );
    expect((await shell(urls.writer, 'ls /workspace/ran 2>&1 | head -1')).trim()).toMatch(/No such file/);
  });

  it('the database socket of a read attachment: writes 403, bad bodies 400, no token 401; the documents unchanged', async () => {
    const doc = (id: string) => ({ id, text: 'x', metadata: {}, embedding: [1, 0, 0] });
    const cases = fc.oneof(
      fc.constantFrom(
        { method: 'POST', p: '/namespaces/default/documents', body: JSON.stringify({ documents: [doc('written')] }), token: true },
        { method: 'DELETE', p: '/namespaces/default/documents/grass', body: undefined, token: true },
        { method: 'POST', p: '/namespaces/other/query', body: '{"embedding":[0,0,1]}', token: true },
        { method: 'POST', p: '/namespaces/default/documents', body: JSON.stringify({ documents: [doc('written')] }), token: false },
        { method: 'GET', p: '/namespaces', body: undefined, token: false },
      ),
      fc.oneof(junkBody, fc.constantFrom('{}', '{"embedding":"x"}', '{"embedding":[0,0,1],"k":0}', '{"embedding":[0,0,1],"k":1001}', '{"embedding":[0,0,1],"k":1.5}', '{"embedding":[]}', '{"embedding":[1e999]}')).map((body) => ({ method: 'POST', p: '/namespaces/default/query', body, token: true })),
      fc.oneof(junkBody, nastyText.map((s) => JSON.stringify({ documents: [{ ...doc(s), embedding: s }] })), fc.constantFrom('{"documents":[]}', '{"documents":{}}', '{"documents":[{"id":1}]}')).map((body) => ({ method: 'POST', p: '/namespaces/default/documents', body, token: true })),
    );
    const db = fuzzTarget('http://db', report, 'pool', t.snapshot, readerSocket);
    try {
      await fc.assert(
        fc.asyncProperty(cases, async (c) => {
          const res = await refused(db, `${c.method} <read socket>${c.p}${c.token ? '' : ' (no token)'}`, { method: c.method, path: c.p, body: c.body, headers: jsonHeaders(c.token ? { authorization: `Bearer ${readerToken}` } : {}) });
          if (!c.token) expect(res.status).toBe(401);
        }),
        fuzzParams(RUNS * 2),
      );
    } finally {
      await db.client.close();
    }
    // The same write through the writer's socket is taken: the refusals above were the read attachment's.
    const written = await request('http://db/namespaces/default/documents', { method: 'POST', body: JSON.stringify({ documents: [doc('written')] }), headers: jsonHeaders({ authorization: `Bearer ${writerToken}` }), dispatcher: writerDb });
    expect([written.statusCode, await written.body.json()]).toEqual([200, { upserted: 1 }]);
  });

  it('every string of every route with a name or a path too long, a NUL byte or `..`: a host path refuses them, nothing is a 5xx, a refusal changes nothing', async () => {
    const groupId = tb.broker.groups.list().find((g) => g.kind === 'sandbox group')!.id;
    // A stop of a sandbox no one started (its id is the only string: a case never names a running one).
    const bodies: Record<string, unknown> = { startSandbox: VALID_SANDBOX, stopSandbox: { id: 'nosuch' } };
    const cases = hostileCases(GROUP_CONTRACT, AUTH, (name) => ({ params: { groupId, sandboxId: 'writer' }, body: bodies[name] }));
    await everyHostileCase(t, cases, {
      // Text typed into a terminal is any text: the line it left is cleared (^U); a sandbox a string started is stopped.
      settle: async (c) => {
        if (c.route.path.endsWith('/input')) expect((await tb.post(c.request.path, { text: '\u0015' }, AUTH)).status).toBe(200);
        if (c.route.path === '/sandbox/start') expect((await tb.post('/sandbox/stop', { id: VALID_SANDBOX.id }, AUTH)).status).toBe(200);
      },
      usable: async () => expect((await shell(urls.writer, 'echo usable')).trim()).toBe('usable'),
    });
  });
});
