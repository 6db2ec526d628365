/**
 * OpenSandbox's execd API fuzzed from its contracts (execdContract.ts): every route with a JSON body
 * gets the bodies its schema refuses and bodies that are no JSON object; the file routes get paths
 * that leave the working directory (`..`, absolute, NUL, through a symlink to / and to its parent);
 * the upload gets broken multipart; every route gets ids no command, session, context or sandbox has,
 * bad query values, a body past BROKER_MAX_BODY_BYTES, and no token; a background command's logs are
 * read with a cursor from the future. Every answer is a 4xx in OpenSandbox's `{code, message}` (a
 * read past the end may be an empty 200), within a bound; the working directory, a file beside it,
 * the pool's counts and the sandbox's execd shells are the same after each case as before. The
 * cases and 5xx per route are printed and written as a report. Every string of every route (ids,
 * query parameters, body fields, map keys, an upload's metadata) gets a name and a path too long, a
 * NUL byte and `..` (hostileStrings.ts): refused where the contract declares a path, never a 5xx.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { startTestBroker, testBackend, type TestBroker } from '../helpers/broker';
import { EXECD_FILES_CONTRACT, EXECD_PROCESS_CONTRACT } from '../../src/api/execd/execdContract';
import { runCodeBody, runCommandBody, sessionRunBody } from '../../src/api/execd/execdBodies';
import type { RouteContract } from '../../src/http/contract';
import { badSegment, invalidBody, publishedSchema, junkBody, nastyText, nastyUrlText, pathTrick, percentEncoded, type Schema } from '../helpers/fuzzInputs';
import { endFuzz, fillPath, FuzzReport, fuzzTarget, fuzzParams, jsonHeaders, refused, sessionRootOnHost, treeState, TREE_STATE_COMMAND, type FuzzTarget } from '../helpers/fuzzHarness';
import { everyHostileCase, hostileCases } from '../helpers/hostileStrings';

const RUNS = 25;
const TOKEN = 'fuzz-execd-token';
const AUTH = { 'x-execd-access-token': TOKEN };
const MAX_BODY_BYTES = 64 * 1024;
const MAX_UPLOAD_BYTES = 32 * 1024;
const LIMITS = { maxCommandBytes: 2048 };
/** Command bodies with BROKER_MAX_COMMAND_BYTES in their schema, as the routes check them. */
const BOUND_BODIES: Record<string, Schema> = {
  runCommand: runCommandBody(LIMITS) as unknown as Schema,
  sessionRun: sessionRunBody(LIMITS) as unknown as Schema,
  runCode: runCodeBody(LIMITS) as unknown as Schema,
};
const ROUTES: [string, RouteContract][] = [...Object.entries(EXECD_PROCESS_CONTRACT.routes), ...Object.entries(EXECD_FILES_CONTRACT.routes)];
/** Paths that reach outside the working directory, through the links the suite makes in it. */
/** Query values that are no whole number (an empty one is absent: the default). */
const notANumber = nastyUrlText.filter((s) => !/^\d*$/.test(s));
/**
 * A file beside the working directory, which no refused request may touch: named after this process,
 * as a local backend's working directories share one parent with every other local broker's.
 */
const CANARY = `fuzz-canary-${process.pid}`;
/** Beside the working directory: the canary, and where a `..` of the hostile strings would make a file. */
const OUTSIDE = [`../${CANARY}`, '../fuzz-dotdot'];
const TRICKS = pathTrick(['root/etc/hosts', 'root/etc', 'root/tmp', `up/${CANARY}`, 'root/etc/../etc/passwd']);

interface ExecdState {
  health: unknown;
  shells: unknown;
  files: unknown;
}

describe(`execd fuzzed from its contracts (${testBackend})`, () => {
  let tb: TestBroker;
  let held: string;
  let ids: Record<string, string>;
  let t: FuzzTarget<ExecdState>;
  const report = new FuzzReport(`execd-${testBackend}`);
  const execd = (): string => `/sandboxes/${held}/execd`;
  /** The canary's path when the working directory is on this host (local backend): removed at the end. */
  let canaryOnHost: string | null = null;

  async function sh(command: string): Promise<string> {
    const r = await tb.post(`/session/${held}/execute`, { command }, { authorization: `Bearer ${TOKEN}` });
    if (r.status !== 200 || r.json.return_code !== 0) throw new Error(`${command}: ${r.status} ${r.text}`);
    return r.json.stdout;
  }

  beforeAll(async () => {
    tb = await startTestBroker({
      BROKER_TOKEN: TOKEN,
      BROKER_CONTAINERS: '1',
      BROKER_MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      BROKER_MAX_COMMAND_BYTES: String(LIMITS.maxCommandBytes),
      BROKER_EXECD_MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES),
    });
    held = (await tb.post('/session/acquire', {}, { authorization: `Bearer ${TOKEN}` })).json.session_id;
    // A directory with a file, links out of it (to / and to its parent), and a file beside it.
    // It also marks its own root, so a Docker session's tree can be found from this host.
    const marker = `/tmp/fuzz-root-${process.pid}`;
    let home = (await sh(`mkdir -p d/e; echo kept > d/f.txt; ln -s / root; ln -s .. up; echo canary > ../${CANARY}; : > ${marker}; pwd`)).trim();
    // The local backend's working directory is on this host, and a Docker session's is under its
    // bash's /proc root: read it here, much cheaper than a command per case.
    if (fs.existsSync(path.join(home, 'd/f.txt'))) canaryOnHost = path.join(home, '..', CANARY);
    else if (testBackend === 'docker') {
      const root = sessionRootOnHost(marker);
      if (root !== null) home = `${root}${home}`;
      else console.warn("*** fuzzExecd: the session's root is not readable from this host (not root?): its tree is read by a command per case ***");
    }
    const onHost = fs.existsSync(path.join(home, 'd/f.txt'));
    const session = await tb.request('POST', `${execd()}/session`, '{}', jsonHeaders(AUTH));
    const context = await tb.request('POST', `${execd()}/code/context`, '{"language":"bash"}', jsonHeaders(AUTH));
    const command = await tb.request('POST', `${execd()}/command`, '{"command":"echo one; echo two"}', jsonHeaders(AUTH));
    const init = /"type":"init","text":"([^"]+)"/.exec(command.text);
    if (session.status !== 200 || context.status !== 200 || !init) throw new Error(`setup: ${session.text} ${context.text} ${command.text}`);
    ids = { sandboxId: held, id: held, sessionId: session.json.session_id, contextId: context.json.id, commandId: init[1] };
    t = fuzzTarget(tb.url, report, 'opensandbox', async () => {
      const h = (await tb.get('/health')).json;
      const files = onHost ? treeState(home, OUTSIDE) : await sh(TREE_STATE_COMMAND(OUTSIDE));
      const shells = tb.broker.execd.list();
      return { health: [h.total_sessions, h.in_use_sessions, h.available_sessions, h.broken_sessions], shells, files };
    });
  });
  afterAll(async () => {
    await endFuzz(report, t, tb);
    if (canaryOnHost) fs.rmSync(canaryOnHost, { force: true });
  });

  const send = (route: RouteContract, over: { params?: Record<string, string>; query?: string; body?: string | Buffer; headers?: Record<string, string> }) =>
    refused(t, `${route.method} ${route.path.replace(/^\/sandboxes\/:\w+\/execd/, '')}`, {
      method: route.method,
      path: fillPath(route.path, { ...ids, ...over.params }) + (over.query ?? ''),
      body: over.body,
      headers: over.headers ?? jsonHeaders(AUTH),
    });

  const jsonRoutes = ROUTES.filter(([, r]) => r.body && (r.body.contentType ?? 'application/json') === 'application/json');

  it.each(jsonRoutes.map(([name, r]) => [name, r] as const))('%s: every body its contract refuses is a 4xx, nothing runs or changes', async (name, route) => {
    const schema = BOUND_BODIES[name] ?? publishedSchema(route.body!.schema);
    await fc.assert(fc.asyncProperty(invalidBody(schema), (body) => send(route, { body }).then(() => undefined)), fuzzParams(RUNS));
  });

  it('the file bodies with paths out of the working directory: refused, nothing written, moved or removed', async () => {
    const R = EXECD_FILES_CONTRACT.routes;
    const cases = fc.oneof(
      TRICKS.map((p) => ({ route: R.permissions, body: { [p]: { mode: 777 } } })),
      TRICKS.map((p) => ({ route: R.makeDirectories, body: { [p + '/new']: { mode: 755 } } })),
      TRICKS.map((p) => ({ route: R.move, body: [{ src: p, dest: 'd/moved' }] })),
      TRICKS.map((p) => ({ route: R.move, body: [{ src: 'd/f.txt', dest: p }] })),
      TRICKS.map((p) => ({ route: R.replace, body: { [p]: { old: 'a', new: 'b' } } })),
    );
    await fc.assert(fc.asyncProperty(cases, ({ route, body }) => send(route, { body: JSON.stringify(body) }).then(() => undefined)), fuzzParams(RUNS * 2));
  });

  it('the file routes with query paths out of the working directory, or bad query values: refused', async () => {
    const R = EXECD_FILES_CONTRACT.routes;
    const cases = fc.oneof(
      fc.tuple(fc.constantFrom(R.info, R.removeFiles, R.search, R.download, R.list, R.removeDirectories), TRICKS).map(([route, p]) => ({ route, query: `?path=${percentEncoded(p)}` })),
      fc.record({ route: fc.constantFrom(R.info, R.removeFiles, R.search, R.download, R.list, R.removeDirectories), query: fc.constantFrom('', '?', '?path=', '?path', '?PATH=d', '?path=%00') }),
      fc.tuple(fc.constantFrom('offset', 'limit'), fc.oneof(fc.constantFrom('-1', 'x', '1.5', '1e3', '0x10', ' 1', '99999999999999999999'), notANumber)).map(([k, v]) => ({ route: R.download, query: `?path=d/f.txt&${k}=${v}` })),
      fc.oneof(fc.constantFrom('-1', 'x', '1.5', '1e9', '00001', '99999'), notANumber).map((v) => ({ route: R.list, query: `?path=d&depth=${v}` })),
      fc.constantFrom('bytes=99-', 'bytes=5-2', 'bytes=x', 'lines=0-1', 'bytes=-0', 'bytes=0-1,3-4,99-100', 'bytes=99999999999999999999-').map((range) => ({ route: R.download, query: '?path=d/f.txt', range })),
      fc.constantFrom('?path=nope.txt', '?path=d/nope', '?path=d/f.txt/x').map((query) => ({ route: R.download, query })),
    );
    await fc.assert(
      fc.asyncProperty(cases, (c: { route: RouteContract; query: string; range?: string }) =>
        refused(
          t,
          `${c.route.method} ${c.route.path.replace(/^\/sandboxes\/:\w+\/execd/, '')}${c.range ? ' (Range)' : ''}`,
          { method: c.route.method, path: fillPath(c.route.path, ids) + c.query, headers: c.range ? { ...AUTH, range: c.range } : AUTH },
          // A Range a server may ignore (another unit, several ranges): the whole file, as HTTP allows.
          (res) => c.range !== undefined && res.status === 200 && res.text === 'kept\n',
        ).then(() => undefined),
      ),
      fuzzParams(RUNS * 2),
    );
  });

  it('every route with an id no command, session, context or sandbox has: a 4xx, nothing runs', async () => {
    /** A body each route would take: only the unknown id refuses it. */
    const valid: Record<string, string> = {
      runCommand: '{"command":"echo ran > ran.txt"}',
      sessionRun: '{"command":"echo ran > ran.txt"}',
      runCode: '{"code":"echo ran > ran.txt"}',
      createSession: '{}',
      createContext: '{"language":"bash"}',
      permissions: '{"d/f.txt":{"mode":600}}',
      makeDirectories: '{"made":{"mode":755}}',
      move: '[{"src":"d/f.txt","dest":"g.txt"}]',
      replace: '{"d/f.txt":{"old":"kept","new":"gone"}}',
    };
    const byQuery: Record<string, string> = { interruptCommand: 'id', interruptCode: 'id' };
    const routes = ROUTES.filter(([name]) => name !== 'upload');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), badSegment, fc.boolean(), async ([name, route], bad, ofTheSandbox) => {
        fc.pre(!Object.values(ids).includes(bad));
        const own = /:(sessionId|commandId|contextId)/.exec(route.path)?.[1];
        const sandboxParam = route.path.includes(':sandboxId') ? 'sandboxId' : 'id';
        const param = own && !ofTheSandbox ? own : sandboxParam;
        const query = byQuery[name] ? `?${byQuery[name]}=${ofTheSandbox ? 'x' : bad}` : name === 'deleteContexts' ? '?language=bash' : '';
        const params = byQuery[name] && !ofTheSandbox ? {} : { [param]: bad };
        await send(route, { params, query, body: valid[name] });
      }),
      fuzzParams(RUNS * 2),
    );
  });

  it('upload: broken multipart, metadata that is no object, paths out of the working directory, a file past the limit: refused, nothing written', async () => {
    const route = EXECD_FILES_CONTRACT.routes.upload;
    const B = 'fuzzboundary';
    const part = (name: string, content: string | Buffer, filename?: string): Buffer =>
      Buffer.concat([
        Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}\r\nContent-Type: application/octet-stream\r\n\r\n`),
        Buffer.from(content),
        Buffer.from('\r\n'),
      ]);
    const end = Buffer.from(`--${B}--\r\n`);
    const meta = (m: unknown): Buffer => part('metadata', JSON.stringify(m), 'metadata');
    const file = (bytes: string | Buffer = 'data'): Buffer => part('file', bytes, 'file');
    const multipart = `multipart/form-data; boundary=${B}`;
    const cases: fc.Arbitrary<{ body: Buffer; type: string }> = fc.oneof(
      TRICKS.map((p) => ({ body: Buffer.concat([meta({ path: p }), file(), end]), type: multipart })),
      fc.oneof(fc.constantFrom(null, 1, 'x', [], [{ path: 'a' }]), fc.record({ path: fc.oneof(fc.integer(), fc.constant(null), fc.constant('')) }), fc.record({ path: fc.constant('ok.txt'), mode: fc.oneof(fc.constantFrom('999', 'rwx', -1, 1.5, true, '0x1ff'), nastyText) })).map((m) => ({
        body: Buffer.concat([meta(m), file(), end]),
        type: multipart,
      })),
      junkBody.map((b) => ({ body: Buffer.concat([part('metadata', b, 'metadata'), file(), end]), type: multipart })),
      fc.constantFrom(
        { body: Buffer.concat([file(), end]), type: multipart },
        { body: Buffer.concat([meta({ path: 'ok.txt' }), file()]), type: multipart },
        { body: Buffer.concat([meta({ path: 'ok.txt' }), Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\nda`)]), type: multipart },
        { body: Buffer.concat([meta({ path: 'ok.txt' }), file()]), type: 'multipart/form-data; boundary=other' },
        { body: Buffer.concat([meta({ path: 'ok.txt' }), file(), end]), type: 'multipart/form-data' },
        { body: Buffer.concat([meta({ path: 'ok.txt' }), file(), end]), type: 'application/json' },
        { body: Buffer.from('{"path":"ok.txt"}'), type: 'application/json' },
        { body: Buffer.from(`--${B}\r\n\r\n\r\n--${B}--\r\n`), type: multipart },
        { body: Buffer.from('garbage'), type: multipart },
        { body: Buffer.concat([meta({ path: 'ok.txt' }), file(Buffer.alloc(MAX_UPLOAD_BYTES + 1, 0x61)), end]), type: multipart },
        { body: Buffer.concat([part('metadata', 'x'.repeat(70 * 1024), 'metadata'), file(), end]), type: multipart },
      ),
    );
    await fc.assert(fc.asyncProperty(cases, ({ body, type }) => send(route, { body, headers: { ...AUTH, 'content-type': type } }).then(() => undefined)), fuzzParams(RUNS * 2));
  });

  it('a body past BROKER_MAX_BODY_BYTES on every JSON route: 413, nothing touched', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...jsonRoutes), fc.integer({ min: MAX_BODY_BYTES + 1, max: MAX_BODY_BYTES * 3 }), async ([, route], size) => {
        const res = await send(route, { body: '{"command":"' + 'A'.repeat(size) + '"}' });
        expect(res.status).toBe(413);
      }),
      fuzzParams(Math.ceil(RUNS / 4)),
    );
  });

  it("a finished command's logs read from a cursor from the future: nothing or a refusal, never a 5xx", async () => {
    const route = EXECD_PROCESS_CONTRACT.routes.commandLogs;
    const cursors = fc.oneof(fc.integer({ min: 3, max: Number.MAX_SAFE_INTEGER }).map(String), fc.constantFrom('-1', '1e3', 'x', '99999999999999999999', '1.5'), notANumber);
    await fc.assert(
      fc.asyncProperty(cursors, (cursor) => refused(t, 'GET /command/:commandId/logs (cursor)', { method: 'GET', path: fillPath(route.path, ids) + `?cursor=${cursor}`, headers: AUTH }, (res) => res.status === 200 && res.text === '').then(() => undefined)),
      fuzzParams(RUNS),
    );
  });

  it('every route without the token, or with a wrong one: 401, nothing runs', async () => {
    const auth = fc.oneof(fc.constant({}), fc.constantFrom(`${TOKEN}x`, '', ' ', TOKEN.toUpperCase()).map((v) => ({ 'x-execd-access-token': v })), fc.constant({ authorization: `Basic ${TOKEN}` }));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), auth, async ([, route], headers) => {
        const res = await send(route, { body: route.body ? '{}' : undefined, headers: jsonHeaders(headers) });
        expect(res.status).toBe(401);
      }),
      fuzzParams(RUNS),
    );
  });

  it('every string of every route with a name or a path too long, a NUL byte or `..`: a declared path refuses them, nothing is a 5xx, a refusal changes nothing', async () => {
    /** Query parameters a route needs beside the one a case tries (a file that is not there: nothing to remove). */
    const query: Record<string, Record<string, string>> = { info: { path: 'd/f.txt' }, download: { path: 'd/f.txt' }, search: { path: 'd' }, list: { path: 'd' }, removeFiles: { path: 'nope.txt' }, removeDirectories: { path: 'nope' }, deleteContexts: { language: 'python' } };
    const base = (name: string) => ({ params: ids, query: query[name] });
    const cases = [...hostileCases(EXECD_PROCESS_CONTRACT, AUTH, base), ...hostileCases(EXECD_FILES_CONTRACT, AUTH, base)];
    await everyHostileCase(t, cases, {
      // A session opened in a `..` directory (a working directory may be anywhere): ended again.
      settle: async (_c, res) => {
        const opened = /"session_id":"(\w+)"/.exec(res.text)?.[1];
        if (opened && opened !== ids.sessionId) expect((await tb.request('DELETE', `${execd()}/session/${opened}`, undefined, AUTH)).status).toBe(200);
      },
      usable: async () => {
        const run = await tb.request('POST', `${execd()}/session/${ids.sessionId}/run`, '{"command":"echo usable"}', jsonHeaders(AUTH));
        expect(run.text).toContain('"text":"usable"');
        expect(await sh('cat d/f.txt')).toBe('kept\n');
      },
    });
  });
});
