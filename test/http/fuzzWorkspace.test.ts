/**
 * The workspace API fuzzed from its declared routes (workspaceContract.ts, its body schemas
 * and query parameters): on the default workspace and on a named one, every body route gets bodies
 * its schema refuses, NUL and commands past BROKER_MAX_COMMAND_BYTES, bodies that are no JSON object
 * and bodies past BROKER_MAX_BODY_BYTES; the file routes get paths out of the working directory
 * (`..`, absolute, NUL, through symlinks to / and to its parent); every route gets bad query values,
 * workspace ids no workspace has, and no token. The WebSockets get the same refusals at the handshake,
 * a bad `since`, a `since` from the future (no replay), and text and binary frames on the event
 * stream, which a viewer only reads (nothing reaches the shell). Every answer is a 4xx in the pool
 * format's `{detail, code}`, within a bound; the workspaces, their files and event logs, and the pool's
 * counts are the same after each case as before. Every string of every route gets a name and a path
 * too long, a NUL byte and `..` (hostileStrings.ts): a filename refuses them, nothing is a 5xx.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import WebSocket from 'ws';
import { startTestBroker, testBackend, type TestBroker } from '../helpers/broker';
import { apiDocOf } from '../../src/http/contract';
import { WORKSPACE_CONTRACT } from '../../src/api/workspace/workspaceContract';
import { badSegment, declaredBody, invalidBody, nastyUrlText, notJsonBody, pathTrick, percentEncoded, type Schema } from '../helpers/fuzzInputs';
import { FuzzReport, endFuzz, fuzzTarget, fuzzParams, jsonHeaders, notARefusal, refused, sessionRootOnHost, treeState, type FuzzTarget } from '../helpers/fuzzHarness';
import { wsUrl } from '../helpers/workspaceClient';
import { everyHostileCase, hostileCases } from '../helpers/hostileStrings';

const WORKSPACE_API_DOC = apiDocOf(WORKSPACE_CONTRACT);

const RUNS = 25;
const TOKEN = 'fuzz-workspace-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MAX_BODY_BYTES = 64 * 1024;
const MAX_COMMAND_BYTES = 2048;
/**
 * A file beside the working directory, which no refused request may touch: named after this process,
 * as a local backend's working directories share one parent with every other local broker's.
 */
const CANARY = `ws-canary-${process.pid}`;
const TRICKS = pathTrick(['root/etc/hosts', 'root/tmp/x', `up/${CANARY}`, 'root/etc/../etc/passwd']);

const schemaOf = (key: string): Schema => declaredBody(WORKSPACE_API_DOC, key);
/** The declared bodies, with what checkCommand adds to `command`: no NUL, at most BROKER_MAX_COMMAND_BYTES. */
const EXECUTE: Schema = {
  ...schemaOf('POST /api/execute'),
  // workspaceInput.ts: a null `wait` is the default
  properties: { command: { type: 'string', pattern: '^[^\\u0000]*$', 'x-max-bytes': MAX_COMMAND_BYTES }, wait: { type: ['number', 'null'], minimum: 0, maximum: 30 } },
};
const WRITE = schemaOf('POST /api/write');
/** workspaceInput.ts: a null `encoding` is utf-8, and `utf8` is its other name. */
const WRITE_BODY: Schema = { ...WRITE, properties: { ...WRITE.properties, encoding: { enum: ['utf-8', 'utf8', 'base64', null] } } };
/** workspaceInput.ts reads its own fields and ignores any other. */
const BODIES: Record<string, Schema> = { execute: EXECUTE, input: { ...schemaOf('POST /api/input'), additionalProperties: true }, write: WRITE_BODY };

interface WorkspaceState {
  health: unknown;
  workspaces: unknown;
  logs: unknown;
  files: unknown;
}

describe(`the workspace API fuzzed (${testBackend})`, () => {
  let tb: TestBroker;
  let named: string;
  let t: FuzzTarget<WorkspaceState>;
  const report = new FuzzReport(`workspace-${testBackend}`);
  /** The default workspace's routes ('') and a named one's. */
  const prefixes = (): string[] => ['', `/workspaces/${named}`];
  /** The canary's paths when the working directories are on this host (local backend): removed at the end. */
  const canariesOnHost: string[] = [];

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_TOKEN: TOKEN, BROKER_CONTAINERS: '1', BROKER_MAX_BODY_BYTES: String(MAX_BODY_BYTES), BROKER_MAX_COMMAND_BYTES: String(MAX_COMMAND_BYTES) });
    named = (await tb.post('/workspaces', {}, AUTH)).json.workspace_id;
    // In each: a directory with a file, links out of it (to / and to its parent), and a file beside it.
    // Each also marks its own root, so a Docker session's tree can be found from this host.
    const homes: string[] = [];
    const markers = prefixes().map((_, i) => `/tmp/fuzz-root-${process.pid}-${i}`);
    for (const [i, p] of prefixes().entries()) {
      const made = await tb.post(`${p}/api/execute`, { command: `mkdir -p d; echo kept > d/f.txt; ln -s / root; ln -s .. up; echo canary > ../${CANARY}; : > ${markers[i]}; pwd`, wait: 30 }, AUTH);
      if (made.json.returncode !== 0) throw new Error(`setup: ${made.text}`);
      homes.push(made.json.stdout.trim().split(/\r?\n/).pop() as string);
    }
    if (homes.every((home) => fs.existsSync(path.join(home, 'd/f.txt')))) {
      canariesOnHost.push(...homes.map((home) => path.join(home, '..', CANARY)));
    } else if (testBackend === 'docker') {
      const roots = markers.map(sessionRootOnHost);
      if (roots.every((r) => r !== null)) homes.forEach((home, i) => (homes[i] = `${roots[i]}${home}`));
      else console.warn('*** fuzzWorkspace: the sessions\' roots are not readable from this host (not root?): their files are read through the API, one engine call each ***');
    }
    const onHost = homes.every((home) => fs.existsSync(path.join(home, 'd/f.txt')));
    const logNext = async (prefix: string): Promise<unknown> => (await tb.request('GET', `${prefix}/api/workspace/logs?offset=-1`, undefined, AUTH)).headers['x-workspace-log-next'];
    t = fuzzTarget(tb.url, report, 'pool', async () => {
      const h = (await tb.get('/health')).json;
      const workspaces = (await tb.request('GET', '/workspaces', undefined, AUTH)).json;
      const logs = await Promise.all(prefixes().map(logNext));
      // A Docker workspace's directory not readable from this host: its known file, read back, stands for it.
      const files = onHost
        ? homes.map((home) => treeState(home, [`../${CANARY}`]))
        : await Promise.all(prefixes().map(async (p) => (await tb.request('GET', `${p}/api/read?filename=d/f.txt`, undefined, AUTH)).json));
      return { health: [h.total_sessions, h.in_use_sessions, h.available_sessions, h.broken_sessions], workspaces, logs, files };
    });
  });
  afterAll(async () => {
    await endFuzz(report, t, tb);
    for (const canary of canariesOnHost) fs.rmSync(canary, { force: true });
  });

  const post = (route: string, p: string, body: string | Buffer | undefined, headers = jsonHeaders(AUTH)) => refused(t, route, { method: 'POST', path: p, body, headers });
  const prefix = fc.constantFrom(0, 1).map((i) => ({ i, p: (): string => prefixes()[i] }));
  const shown = (i: number, route: string): string => `${['', '/workspaces/:workspaceId'][i]}${route}`;

  it.each(Object.keys(BODIES))('POST /api/%s: every body its schema refuses is a 4xx, nothing typed, written or logged', async (name) => {
    await fc.assert(
      fc.asyncProperty(prefix, invalidBody(BODIES[name]), ({ i, p }, body) => post(`POST ${shown(i, `/api/${name}`)}`, `${p()}/api/${name}`, body).then(() => undefined)),
      fuzzParams(RUNS),
    );
  });

  it('POST /api/interrupt with a body that is no JSON: a 400', async () => {
    await fc.assert(fc.asyncProperty(prefix, notJsonBody, ({ i, p }, body) => post(`POST ${shown(i, '/api/interrupt')}`, `${p()}/api/interrupt`, body).then(() => undefined)), fuzzParams(RUNS));
  });

  it('the file routes with paths out of the working directory: refused, nothing written', async () => {
    const cases = fc.oneof(
      fc.tuple(TRICKS, fc.constantFrom('utf-8', 'base64')).map(([filename, encoding]) => ({ method: 'POST', route: '/api/write', query: '', body: JSON.stringify({ filename, content: 'aGk=', encoding }) })),
      TRICKS.map((f) => ({ method: 'GET', route: '/api/read', query: `?filename=${percentEncoded(f)}`, body: undefined })),
      TRICKS.map((f) => ({ method: 'GET', route: '/api/read-partial', query: `?filename=${percentEncoded(f)}&offset=0&limit=10`, body: undefined })),
    );
    await fc.assert(
      fc.asyncProperty(prefix, cases, ({ i, p }, c) => refused(t, `${c.method} ${shown(i, c.route)} (path)`, { method: c.method, path: `${p()}${c.route}${c.query}`, body: c.body, headers: jsonHeaders(AUTH) }).then(() => undefined)),
      fuzzParams(RUNS * 2),
    );
  });

  it('bad query values: refused', async () => {
    const bad = fc.oneof(fc.constantFrom('x', '1.5', '1e3', '0x10', ' 1', '99999999999999999999', '--1'), nastyUrlText.filter((s) => !/^-?\d*$/.test(decodeURIComponent(s))));
    const cases = fc.oneof(
      fc.tuple(fc.constantFrom('offset', 'limit'), bad).map(([k, v]) => `/api/workspace/logs?${k}=${v}`),
      fc.constantFrom('/api/workspace/logs?limit=0', '/api/workspace/logs?limit=1001', '/api/workspace/logs?limit=-1'),
      fc.tuple(fc.constantFrom('offset', 'limit'), fc.oneof(bad, fc.constant('-1'))).map(([k, v]) => `/api/read-partial?filename=d/f.txt&${k}=${v}`),
      fc.constantFrom('/api/read', '/api/read?filename=', '/api/read?FILENAME=d/f.txt', '/api/read-partial', '/api/read?filename=nope.txt', '/api/read?filename=d', '/api/read?filename=%zz'),
    );
    await fc.assert(fc.asyncProperty(prefix, cases, ({ i, p }, q) => refused(t, `GET ${shown(i, q.split('?')[0])} (query)`, { method: 'GET', path: `${p()}${q}`, headers: AUTH }).then(() => undefined)), fuzzParams(RUNS * 2));
  });

  it('every route of a workspace no one created, and the deprecated ones: 404 and 410', async () => {
    const routes = fc.constantFrom(
      { method: 'POST', route: '/api/execute', body: '{"command":"echo ran > ran.txt"}' },
      { method: 'POST', route: '/api/input', body: '{"text":"echo ran > ran.txt\\r"}' },
      { method: 'POST', route: '/api/interrupt', body: '{}' },
      { method: 'POST', route: '/api/write', body: '{"filename":"ran.txt","content":"x"}' },
      { method: 'GET', route: '/api/read?filename=d/f.txt', body: undefined },
      { method: 'GET', route: '/api/read-partial?filename=d/f.txt', body: undefined },
      { method: 'GET', route: '/api/workspace/logs', body: undefined },
      { method: 'DELETE', route: '', body: undefined },
    );
    const deprecated = fc.tuple(fc.constantFrom('GET', 'POST'), fc.constantFrom('/execute-async', '/execute-async/status', '/execute/worker'));
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.tuple(badSegment, routes), deprecated), fc.constantFrom(0, 1), async (c, i) => {
        if (typeof c[0] === 'string' && typeof c[1] === 'string') {
          const [method, route] = c as [string, string];
          await refused(t, `${method} ${shown(i, route)} (deprecated)`, { method, path: `${prefixes()[i]}${route}`, body: method === 'POST' ? '{}' : undefined, headers: jsonHeaders(AUTH) });
          return;
        }
        const [id, r] = c as [string, { method: string; route: string; body?: string }];
        fc.pre(id !== named);
        await refused(t, `${r.method} /workspaces/:workspaceId${r.route.split('?')[0]} (unknown id)`, { method: r.method, path: `/workspaces/${id}${r.route}`, body: r.body, headers: jsonHeaders(AUTH) });
      }),
      fuzzParams(RUNS * 2),
    );
  });

  it('a body past BROKER_MAX_BODY_BYTES, and any route without the token: 413 and 401', async () => {
    const routes = fc.constantFrom('/api/execute', '/api/input', '/api/write', '/api/interrupt');
    await fc.assert(
      fc.asyncProperty(prefix, routes, fc.boolean(), fc.integer({ min: MAX_BODY_BYTES + 1, max: MAX_BODY_BYTES * 3 }), async ({ i, p }, route, withToken, size) => {
        const body = withToken ? '{"command":"' + 'A'.repeat(size) + '"}' : '{"command":"echo ran > ran.txt"}';
        const res = await post(`POST ${shown(i, route)} (${withToken ? 'huge body' : 'no token'})`, `${p()}${route}`, body, jsonHeaders(withToken ? AUTH : {}));
        expect(res.status).toBe(withToken ? 413 : 401);
      }),
      fuzzParams(RUNS),
    );
  });

  // ---- WebSockets ----

  /** An upgrade the broker must refuse: its status and body, in the pool format. */
  function refusedUpgrade(url: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers, handshakeTimeout: 30_000 });
      socket.once('open', () => {
        socket.close();
        reject(new Error(`upgrade accepted: ${url}`));
      });
      socket.once('error', reject);
      socket.once('unexpected-response', (_req, res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
    });
  }

  it('WebSocket upgrades of a workspace no one created, or without the token: refused at the handshake', async () => {
    await fc.assert(
      fc.asyncProperty(badSegment, fc.constantFrom('/ws/workspace', '/ws/workspace/terminal'), fc.boolean(), async (id, socket, withToken) => {
        fc.pre(id !== named);
        const before = await t.snapshot();
        const target = withToken ? `/workspaces/${id}${socket}` : `${['', `/workspaces/${named}`][id.length % 2]}${socket}`;
        const answer = await refusedUpgrade(wsUrl(tb, target), withToken ? AUTH : {});
        let json: unknown;
        try {
          json = JSON.parse(answer.text);
        } catch {
          json = undefined;
        }
        const why = notARefusal({ status: answer.status, headers: { 'content-type': 'application/json' }, text: answer.text, json }, 'pool', 'GET');
        report.count(`WS ${withToken ? '/workspaces/:workspaceId' : ''}${socket} (${withToken ? 'unknown id' : 'no token'})`, answer.status);
        if (why) throw new Error(`${target}: ${why}: ${answer.status} ${answer.text}`);
        // an id that is no percent-encoding (`%`, `%zz`) is a 400
        expect(withToken ? [400, 404] : [401]).toContain(answer.status);
        expect(await t.snapshot()).toEqual(before);
      }),
      fuzzParams(RUNS),
    );
  });

  /** Opens a socket, runs `use` once it is open, and waits until it is closed (by either side). */
  function withSocket(url: string, use: (socket: WebSocket, received: Buffer[]) => Promise<void>): Promise<{ code: number; reason: string; received: Buffer[] }> {
    return new Promise((resolve, reject) => {
      const received: Buffer[] = [];
      const socket = new WebSocket(url, { headers: AUTH, handshakeTimeout: 30_000 });
      socket.on('message', (data: Buffer) => received.push(data));
      socket.once('error', reject);
      socket.once('close', (code, reason) => resolve({ code, reason: reason.toString(), received }));
      socket.once('open', () => use(socket, received).catch(reject));
    });
  }

  /** A ping answered: everything sent before it (a replay at the join) has arrived. */
  const pinged = (socket: WebSocket): Promise<void> => new Promise((resolve) => (socket.once('pong', () => resolve()), socket.ping()));

  it("/ws/workspace misused: a bad `since` closes it (1003), one from the future replays nothing, a viewer's frames reach no shell", async () => {
    const misuse = fc.oneof(
      fc.oneof(fc.constantFrom('-1', 'x', '1.5', '', '%zz', '1e3'), nastyUrlText.filter((s) => !/^\d+$/.test(s))).map((since) => ({ since, frames: [] as (string | Buffer)[] })),
      fc.integer({ min: 1_000, max: Number.MAX_SAFE_INTEGER }).map((ahead) => ({ since: `future+${ahead}`, frames: [] as (string | Buffer)[] })),
      fc
        .array(fc.oneof(fc.constantFrom('echo ran > ran.txt\r', '{"type":"input","data":"echo ran > ran.txt\\r"}', '{"type":"resize","cols":10,"rows":5}', '\u0003', '\u0004'), fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), fc.constant(Buffer.from('echo ran > ran.txt\r'))), { minLength: 1, maxLength: 4 })
        .map((frames) => ({ since: null as string | null, frames })),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(0, 1), misuse, async (i, m) => {
        const before = await t.snapshot();
        const next = Number((before.logs as string[])[i]);
        const since = m.since === null ? null : m.since.startsWith('future+') ? String(next + Number(m.since.slice(7))) : m.since;
        const route = `WS ${shown(i, '/ws/workspace')} (${since === null ? 'frames' : m.since!.startsWith('future+') ? 'since from the future' : 'bad since'})`;
        const url = wsUrl(tb, `${prefixes()[i]}/ws/workspace${since === null ? '' : `?since=${since}`}`);
        const closed = await withSocket(url, async (socket, received) => {
          if (since !== null && !m.since!.startsWith('future+')) return; // the broker closes it
          for (const f of m.frames) socket.send(f, { binary: Buffer.isBuffer(f) });
          await pinged(socket);
          // nothing replayed from the future, nothing answered to a viewer's frames
          if (received.length > 0) throw new Error(`${route}: got ${received.map(String).join(' | ').slice(0, 300)}`);
          socket.close(1000);
        });
        report.count(route, `close ${closed.code}`);
        if (since !== null && !m.since!.startsWith('future+')) expect([closed.code, closed.reason]).toEqual([1003, "'since' must be a non-negative integer seq_id"]);
        else expect(closed.code).toBe(1000);
        expect(await t.snapshot()).toEqual(before);
      }),
      fuzzParams(RUNS),
    );
    // What a viewer sent reached no shell: a command typed now runs, and nothing before it wrote ran.txt.
    const check = await tb.post('/api/execute', { command: 'ls ran.txt 2>&1 | head -1', wait: 30 }, AUTH);
    expect(check.json.stdout).toMatch(/No such file/);
  });

  it('every string of every route with a name or a path too long, a NUL byte or `..`: a filename refuses them, nothing is a 5xx, a refusal changes nothing', async () => {
    const cases = hostileCases(WORKSPACE_CONTRACT, AUTH, () => ({ params: { workspaceId: named, name: 'xterm.css' }, query: {} }));
    await everyHostileCase(t, cases, {
      // Text typed into a terminal is any text: the line it left is cleared (^U), as a user would.
      settle: async (c) => {
        if (c.route.path.endsWith('/api/input')) expect((await tb.post(c.request.path, { text: '\u0015' }, AUTH)).status).toBe(200);
      },
      usable: async () => {
        for (const p of prefixes()) expect((await tb.post(`${p}/api/execute`, { command: 'cat d/f.txt', wait: 30 }, AUTH)).json.stdout).toMatch(/^kept\r?\n$/);
      },
    });
  });
});
