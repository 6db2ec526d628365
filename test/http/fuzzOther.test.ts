/**
 * The strings of every API no other fuzz suite tries (hostileStrings.ts): which those are is read
 * from the suites themselves (each names the contracts it gives `hostileCases`) and from
 * src/api/contracts.ts, so a contract added there is tried here until a suite of its own takes it.
 * Today: /health and /metrics, the dashboard and its admin routes, the API document and its viewer,
 * a gateway's cluster routes and /images. Every answer is a 4xx in
 * the pool format's `{detail, code}` (or as the route's contract declares it), within a bound; the
 * pool's counts and the held lease's working directory are the same after each case as before.
 *
 * The routes' refusals do not depend on the backend:
 * @backend any
 */
import fs from 'node:fs';
import path from 'node:path';
import { startTestBroker, testBackend, type TestBroker } from '../helpers/broker';
import { API_CONTRACTS } from '../../src/api/contracts';
import type { ApiContract } from '../../src/http/contract';
import { endFuzz, FuzzReport, fuzzTarget, jsonHeaders, refused, type FuzzTarget } from '../helpers/fuzzHarness';
import { everyHostileCase, hostileCases } from '../helpers/hostileStrings';

const TOKEN = 'fuzz-other-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** The contracts the other fuzz suites give `hostileCases`, by the names they import them under. */
async function contractsFuzzedElsewhere(): Promise<Set<ApiContract>> {
  const names = new Set<string>();
  for (const file of fs.readdirSync(__dirname).filter((f) => /^fuzz[A-Z]\w*\.test\.ts$/.test(f) && f !== path.basename(__filename))) {
    for (const m of fs.readFileSync(path.join(__dirname, file), 'utf8').matchAll(/hostileCases\(\s*([A-Z][A-Z0-9_]*)/g)) names.add(m[1]);
  }
  const modules = fs.readdirSync(path.join(__dirname, '../../src/api'), { recursive: true, encoding: 'utf8' }).filter((f) => /Contract\.ts$/.test(f));
  const byName = new Map<string, unknown>();
  for (const m of modules) for (const [name, value] of Object.entries((await import(path.join(__dirname, '../../src/api', m))) as Record<string, unknown>)) byName.set(name, value);
  for (const name of names) if (!API_CONTRACTS.includes(byName.get(name) as ApiContract)) throw new Error(`a fuzz suite gives hostileCases ${name}, which is no contract of src/api/contracts.ts`);
  return new Set([...names].map((n) => byName.get(n) as ApiContract));
}

interface OtherState {
  health: unknown;
  files: unknown;
}

describe(`the other APIs' strings fuzzed (${testBackend})`, () => {
  let tb: TestBroker;
  let held: string;
  let t: FuzzTarget<OtherState>;
  const report = new FuzzReport(`other-${testBackend}`);
  /** The contracts no other suite takes. */
  let rest: ApiContract[];

  beforeAll(async () => {
    const elsewhere = await contractsFuzzedElsewhere();
    rest = API_CONTRACTS.filter((api) => !elsewhere.has(api));
    tb = await startTestBroker({ BROKER_TOKEN: TOKEN, BROKER_CONTAINERS: '1' });
    held = (await tb.post('/session/acquire', {}, AUTH)).json.session_id;
    await tb.post(`/session/${held}/execute`, { command: 'echo kept > f.txt' }, AUTH);
    t = fuzzTarget(tb.url, report, 'pool', async () => {
      const h = (await tb.get('/health')).json;
      const files = (await tb.request('GET', `/sandboxes/${held}/execd/directories/list?path=.`, undefined, AUTH)).json;
      return { health: [h.total_sessions, h.in_use_sessions, h.available_sessions, h.broken_sessions, h.cleaning_sessions], files };
    });
  });
  afterAll(() => endFuzz(report, t, tb));

  it('reads which contracts the other suites take: each of them names one at least, and one is left here at least', () => {
    const others = fs.readdirSync(__dirname).filter((f) => /^fuzz[A-Z]\w*\.test\.ts$/.test(f) && f !== path.basename(__filename));
    // A rename of the fuzz suites must not leave this reading none (then every contract lands here).
    expect(others.length).toBeGreaterThanOrEqual(6);
    for (const file of others) {
      expect({ file, names: /hostileCases\(\s*[A-Z]/.test(fs.readFileSync(path.join(__dirname, file), 'utf8')) }).toEqual({ file, names: true });
    }
    expect(rest.length).toBeGreaterThan(0);
  });

  it('every string of their routes with a name or a path too long, a NUL byte or `..`: nothing is a 5xx, a refusal changes nothing', async () => {
    // By parameter name: a route with a parameter of a new name fails here, naming it.
    const params = { sessionId: held, index: '0', asset: 'dashboard.js', name: 'swagger-ui.css', tag: 'x', snapshotId: 'snap-0000000000000000' };
    const cases = rest.flatMap((api) => hostileCases(api, AUTH, () => ({ params })));
    await everyHostileCase(t, cases, { usable: async () => expect((await tb.post(`/session/${held}/execute`, { command: 'cat f.txt' }, AUTH)).json.stdout).toBe('kept\n') });
  });

  it("an asset named after an object's built-in property (constructor, __proto__, toString): a 404", async () => {
    for (const route of ['/ui/dashboard', '/docs/assets', '/ui/assets']) {
      for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        const res = await refused(t, `GET ${route}/:name (a prototype's name)`, { method: 'GET', path: `${route}/${name}`, headers: jsonHeaders(AUTH) }, (r) => r.status === 404);
        expect(res.status).toBe(404);
      }
    }
  });
});
