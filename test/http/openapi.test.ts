/**
 * /openapi.json is true to the server. Every route the seam registers is described and
 * every described operation is a registered route; every described path answers (never the seam's
 * route_not_found); every example validates against its schema; and a sample of real answers (pool,
 * health, workspace, execd, dashboard, errors of both formats) validates against the schema of its
 * documented status, with ajv's JSON Schema 2020-12 build (OpenAPI 3.1's dialect). /docs serves
 * Swagger UI from node_modules.
 *
 * The document and the answers' schemas are the HTTP layer's, the same over every backend:
 * @backend any
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { WebSocket } from 'ws';
import { startTestBroker, type HttpResult, type TestBroker } from '../helpers/broker';
import { wsUrl } from '../helpers/workspaceClient';
import { API_DOCS } from '../../src/api/docs/apiDocs';
import { buildOpenApi, openApiPath } from '../../src/http/openApiDocument';

const TOKEN = 'openapi-secret';
const auth = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const pointer = (...parts: string[]): string => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

describe('OpenAPI: /openapi.json is true to the server', () => {
  let tb: TestBroker;
  let doc: Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);

  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '3', BROKER_TOKEN: TOKEN });
    await tb.broker.warm();
    const r = await tb.request('GET', '/openapi.json');
    expect(r.status).toBe(200); // public: it describes routes, holds no data
    doc = r.json;
    ajv.addSchema(doc, 'openapi.json');
  }, 120_000);
  afterAll(() => tb?.close(), 60_000);

  const call = (method: string, path: string, body?: unknown): Promise<HttpResult> =>
    tb.request(method, path, body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body), auth);

  /** The answer's status is documented for this operation, and its JSON body fits that status's schema. */
  function fits(method: string, pattern: string, r: Pick<HttpResult, 'status' | 'json'>): void {
    const path = openApiPath(pattern);
    const op = doc.paths[path]?.[method.toLowerCase()];
    expect({ operation: `${method} ${path}`, found: op !== undefined }).toEqual({ operation: `${method} ${path}`, found: true });
    const documented = op.responses[String(r.status)];
    expect({ operation: `${method} ${path}`, status: r.status, body: documented ? null : r.json }).toEqual({ operation: `${method} ${path}`, status: r.status, body: null });
    if (!documented.content?.['application/json']) return;
    const validate = ajv.getSchema(`openapi.json#/${pointer('paths', path, method.toLowerCase(), 'responses', String(r.status), 'content', 'application/json', 'schema')}`)!;
    const ok = validate(r.json);
    expect({ operation: `${method} ${path} ${r.status}`, errors: ok ? null : validate.errors, body: ok ? null : r.json }).toMatchObject({ errors: null });
  }

  it('describes every registered route, and no route that is not registered', () => {
    const routes = tb.broker.seam.routeList();
    // A route listed here needs a description: in its API's contract (`<feature>Contract.ts`), listed in src/api/docs/apiDocs.ts.
    expect({ undocumented: buildOpenApi(API_DOCS, routes, 'test').undocumented }).toEqual({ undocumented: [] });
    const registered = new Set(routes.map((r) => `${r.method === 'WS' ? 'get' : r.method.toLowerCase()} ${openApiPath(r.path)}`));
    const described = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item as Json).map((m) => `${m} ${path}`));
    expect(described.filter((d) => !registered.has(d))).toEqual([]);
    expect(described.length).toBe(registered.size);
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item as Json).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    // Public routes need no token; the others carry the global security and a 401.
    for (const r of routes.filter((x) => x.method !== 'WS')) {
      const op = doc.paths[openApiPath(r.path)][r.method.toLowerCase()];
      expect({ route: `${r.method} ${r.path}`, public: op.security?.length === 0 }).toEqual({ route: `${r.method} ${r.path}`, public: r.public });
      if (!r.public) expect(op.responses['401']).toBeDefined();
    }
  });

  it('has examples that fit their schemas', () => {
    let checked = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item as Json)) {
        const media: [string, Json][] = [];
        if (op.requestBody) media.push(...Object.entries(op.requestBody.content as Json).map(([t, m]): [string, Json] => [`request ${t}`, m]));
        for (const [status, r] of Object.entries(op.responses as Json)) media.push(...Object.entries((r.content ?? {}) as Json).map(([t, m]): [string, Json] => [`${status} ${t}`, m]));
        for (const [where, m] of media) {
          if (m.example === undefined) continue;
          const at = where.startsWith('request') ? ['requestBody', 'content', where.slice(8)] : ['responses', where.split(' ')[0], 'content', where.slice(where.indexOf(' ') + 1)];
          const validate = ajv.getSchema(`openapi.json#/${pointer('paths', path, method, ...at, 'schema')}`)!;
          const ok = validate(m.example);
          expect({ at: `${method} ${path} ${where}`, errors: ok ? null : validate.errors }).toEqual({ at: `${method} ${path} ${where}`, errors: null });
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(40);
  });

  it("shows the contracts' schemas without the input checks' own keywords (their refusal wording and rules)", () => {
    const internal: string[] = [];
    const walk = (value: unknown, at: string): void => {
      if (value === null || typeof value !== 'object') return;
      for (const [key, inner] of Object.entries(value)) {
        if (/^x-/.test(key)) internal.push(`${at}/${key}`);
        walk(inner, `${at}/${key}`);
      }
    };
    walk(doc, '#');
    expect(internal).toEqual([]);
    // The schemas those keywords sat on are still there, whole.
    const acquire = doc.components.schemas.AcquireRequest;
    expect(acquire.properties.files).toMatchObject({ type: ['object', 'null'], additionalProperties: { type: 'string', contentEncoding: 'base64' } });
    const execute = doc.paths['/session/{sessionId}/execute'].post.requestBody.content['application/json'].schema;
    expect(execute).toMatchObject({ type: 'object', required: ['command'], properties: { command: { type: 'string', pattern: '^[^\\u0000]*$' } } });
  });

  it('answers on every described path (never route_not_found), in the documented shape when documented', async () => {
    const example = (op: Json, name: string): string => String(op.parameters.find((p: Json) => p.name === name && p.in === 'path')?.example ?? 'x');
    const refused: string[] = [];
    let asked = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item as Json)) {
        asked++;
        const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(example(op, name)));
        if (op.responses['101']) {
          // A WebSocket: opens, or is refused by its route (an unknown workspace), never as an unknown route.
          const answer = await new Promise<{ status: number; body: string }>((resolve) => {
            const ws = new WebSocket(wsUrl(tb, url), { headers: auth });
            ws.once('open', () => (ws.close(), resolve({ status: 101, body: '' })));
            ws.once('unexpected-response', (_req, res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString()));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
            });
            ws.once('error', () => undefined);
          });
          if (answer.body.includes('route_not_found')) refused.push(`WS ${url}`);
          continue;
        }
        // A body that is not JSON: a JSON route answers 400 before it does anything, so no call here changes anything.
        const r = await call(method.toUpperCase(), url, ['post', 'put', 'patch'].includes(method) ? '{not json' : undefined);
        if (r.status === 404 && r.json?.code === 'route_not_found') refused.push(`${method.toUpperCase()} ${url}`);
        const documented = op.responses[String(r.status)]?.content?.['application/json'];
        if (documented && r.headers['content-type']?.toString().startsWith('application/json')) {
          const validate = ajv.getSchema(`openapi.json#/${pointer('paths', path, method, 'responses', String(r.status), 'content', 'application/json', 'schema')}`)!;
          if (!validate(r.json)) refused.push(`${method.toUpperCase()} ${url} ${r.status}: ${JSON.stringify(validate.errors)} ${r.text}`);
        }
      }
    }
    expect(refused).toEqual([]);
    // A WebSocket beside an HTTP GET of the same path is that GET's 101.
    expect(asked).toBe(new Set(tb.broker.seam.routeList().map((r) => `${r.method === 'WS' ? 'GET' : r.method} ${r.path}`)).size);
  }, 120_000);

  it('fits the answers of the pool API and /health, successes and errors', async () => {
    const acquired = await call('POST', '/session/acquire', { files: { 'in.txt': 'aGk=' }, startup_commands: ['export A=1'], lease_ttl: 60 });
    fits('POST', '/session/acquire', acquired);
    const id = acquired.json.session_id as string;
    fits('POST', '/session/:sessionId/execute', await call('POST', `/session/${id}/execute`, { command: 'cat in.txt; echo $A' }));
    fits('POST', '/session/:sessionId/execute', await call('POST', `/session/${id}/execute`, { command: 'exit 3', facts: true, request_id: 'r1' }));
    fits('POST', '/session/:sessionId/heartbeat', await call('POST', `/session/${id}/heartbeat`, {}));
    fits('GET', '/session/:sessionId/history', await call('GET', `/session/${id}/history`));
    fits('POST', '/session/:sessionId/release', await call('POST', `/session/${id}/release`, {}));
    const ended = await call('POST', `/session/${id}/execute`, { command: 'true' });
    expect(ended.status).toBe(400);
    fits('POST', '/session/:sessionId/execute', ended);
    fits('POST', '/session/:sessionId/execute', await call('POST', '/session/nope/execute', { command: 'true' }));
    fits('POST', '/session/acquire', await call('POST', '/session/acquire', { files: { '../x': 'aGk=' } }));
    const group = await call('POST', '/session/acquire_group', { n: 2 });
    fits('POST', '/session/acquire_group', group);
    for (const s of group.json.sessions) await call('POST', `/session/${s.session_id}/release`, {});
    const unauthorized = await tb.request('POST', '/session/acquire', '{}');
    expect(unauthorized.status).toBe(401);
    fits('POST', '/session/acquire', unauthorized);
    fits('GET', '/health', await tb.request('GET', '/health'));
    fits('GET', '/admin/state', await call('GET', '/admin/state'));
    fits('POST', '/sandbox/start', await call('POST', '/sandbox/start', { id: '-bad' }));
  });

  it('fits the answers of the workspace API', async () => {
    const created = await call('POST', '/workspaces', {});
    fits('POST', '/workspaces', created);
    const w = `/workspaces/${created.json.workspace_id}`;
    try {
      fits('POST', '/workspaces/:workspaceId/api/execute', await call('POST', `${w}/api/execute`, { command: 'echo hi' }));
      fits('GET', '/workspaces/:workspaceId/api/workspace/logs', await call('GET', `${w}/api/workspace/logs?offset=-10`));
      fits('POST', '/workspaces/:workspaceId/api/write', await call('POST', `${w}/api/write`, { filename: 'a.txt', content: 'x' }));
      fits('GET', '/workspaces/:workspaceId/api/read', await call('GET', `${w}/api/read?filename=a.txt`));
      fits('GET', '/workspaces/:workspaceId/api/read-partial', await call('GET', `${w}/api/read-partial?filename=a.txt&limit=1`));
      fits('GET', '/workspaces/:workspaceId/api/read', await call('GET', `${w}/api/read?filename=missing.txt`));
      fits('GET', '/workspaces', await call('GET', '/workspaces'));
    } finally {
      fits('DELETE', '/workspaces/:workspaceId', await call('DELETE', w));
    }
  });

  it('fits the answers of the execd API, its events included', async () => {
    const id = (await call('POST', '/session/acquire', {})).json.session_id as string;
    const x = `/sandboxes/${id}/execd`;
    try {
      fits('GET', '/sandboxes/:sandboxId/execd/ping', await call('GET', `${x}/ping`));
      const run = await call('POST', `${x}/command`, { command: 'echo hi; exit 3' });
      expect(run.status).toBe(200);
      const events = run.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
      const event = ajv.getSchema('openapi.json#/components/schemas/ExecdEvent')!;
      for (const e of events) expect({ e, errors: event(e) ? null : event.errors }).toMatchObject({ errors: null });
      expect(events.map((e) => e.type)).toEqual(['init', 'stdout', 'error']);
      fits('GET', '/sandboxes/:sandboxId/execd/command/status/:commandId', await call('GET', `${x}/command/status/${events[0].text}`));
      fits('POST', '/sandboxes/:sandboxId/execd/code/context', await call('POST', `${x}/code/context`, { language: 'bash' }));
      fits('GET', '/sandboxes/:sandboxId/execd/code/contexts', await call('GET', `${x}/code/contexts`));
      await call('POST', `${x}/command`, { command: 'echo hello > notes.txt' });
      fits('GET', '/sandboxes/:id/execd/files/info', await call('GET', `${x}/files/info?path=notes.txt`));
      const missing = await call('GET', `${x}/files/info?path=missing.txt`);
      expect(missing.json.code).toBe('FILE_NOT_FOUND');
      fits('GET', '/sandboxes/:id/execd/files/info', missing);
      fits('GET', '/sandboxes/:id/execd/directories/list', await call('GET', `${x}/directories/list?path=.`));
      fits('GET', '/sandboxes/:id/execd/metrics', await call('GET', `${x}/metrics`));
      fits('GET', '/sandboxes/:sandboxId/execd/ping', await call('GET', '/sandboxes/nope/execd/ping'));
    } finally {
      await call('POST', `/session/${id}/release`, {});
    }
  });

  it('fits the answers of the lifecycle API: a list, an unknown sandbox, an unserved route', async () => {
    fits('GET', '/v1/sandboxes', await call('GET', '/v1/sandboxes?pageSize=5'));
    fits('GET', '/v1/sandboxes', await call('GET', '/v1/sandboxes?state=Nope'));
    fits('GET', '/v1/sandboxes/:id', await call('GET', '/v1/sandboxes/nope'));
    const snapshots = await call('GET', '/v1/snapshots');
    expect(snapshots.status).toBe(501);
    fits('GET', '/v1/snapshots', snapshots);
    fits('POST', '/v1/sandboxes', await call('POST', '/v1/sandboxes', { image: { uri: 'x' }, volumes: [{}] }));
  });

  it('fits the answers of the task sandboxes API: an unknown one, a bad create', async () => {
    fits('GET', '/sandboxes/:id', await call('GET', '/sandboxes/nope'));
    fits('POST', '/sandboxes', await call('POST', '/sandboxes', { repo: '../x' }));
    fits('GET', '/sandboxes/:id/stream/control', await call('GET', '/sandboxes/nope/stream/control'));
  });

  it('serves Swagger UI from node_modules at /docs, without a token', async () => {
    const page = await tb.request('GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('/openapi.json');
    for (const asset of ['/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css']) expect((await tb.request('GET', asset)).status).toBe(200);
    expect((await tb.request('GET', '/docs/assets/index.html')).status).toBe(404);
  });
});
