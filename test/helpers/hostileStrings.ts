/**
 * Every string a contract's routes take, each tried with the values a file system refuses: a name
 * past NAME_MAX (255 bytes), a path past PATH_MAX (4095 bytes), a NUL byte, and `..`.
 *
 * The routes and their strings come from the contracts alone (src/api/*Contract.ts): each path
 * parameter, each string query parameter, and each string of a body at any depth (a field, an item
 * of a list, a map's keys and values, a JSON document carried in a string as its `contentSchema`
 * says, a multipart part), so a route or a field added to a contract is tried with no list to keep.
 * One case puts one such value in one place of a request that is otherwise one the route takes (the
 * plainest body its schema accepts, or the suite's own), and every place gets every kind of value.
 *
 * What a case must answer (hostileCase): never a 5xx (but the 501 its contract declares) and never a
 * hang; a refusal in the API's own envelope that changed nothing; and a refusal without fail where
 * the value breaks the place's declared schema, which for a declared path (`x-path`) includes a name
 * or a whole path too long and a NUL byte. A value the place takes (a `..` in a working directory,
 * a long command) is answered as any other: the suite ends what the call made (`settle`) and checks
 * that its sandbox is still usable.
 */
import Ajv from 'ajv';
import fc from 'fast-check';
import type { HttpResult } from './broker';
import type { ApiContract, RouteContract } from '../../src/http/contract';
import { FUZZ_SEED, notARefusal, REQUEST_BOUND_MS, type FuzzRequest, type FuzzTarget } from './fuzzHarness';
import { percentEncoded, publishedSchema, validValue, type Schema } from './fuzzInputs';

export type HostileKind = 'long name' | 'long path' | 'NUL' | 'dot-dot';
export const HOSTILE_KINDS: readonly HostileKind[] = ['long name', 'long path', 'NUL', 'dot-dot'];

/**
 * Values of each kind. The `..` ones climb one level at most (a working directory's parent is the
 * suite's to watch), since where `..` is taken (a working directory) it is taken for real. In a URL
 * a long path is ASCII: percent-encoded, two-byte characters would pass the 16 KiB a request's head
 * may have, which the HTTP parser refuses before any route (and any API's envelope) is known.
 */
const longPath = (parts: string[]) => fc.tuple(fc.integer({ min: 2048, max: 2600 }), fc.constantFrom(...parts)).map(([n, part]) => part.repeat(n) + 'x');
const HOSTILE: Record<HostileKind, fc.Arbitrary<string>> = {
  'long name': fc.tuple(fc.integer({ min: 256, max: 3000 }), fc.constantFrom('', 'd/', '/tmp/')).map(([n, at]) => at + 'n'.repeat(n)),
  'long path': longPath(['d/', 'é/']),
  NUL: fc.constantFrom('a\u0000b', '\u0000', 'd/f.txt\u0000../../x', 'x\u0000/..'),
  'dot-dot': fc.constantFrom('..', '../fuzz-dotdot', 'd/../../fuzz-dotdot', './..', '../'),
};

const LONG_URL_PATH = longPath(['d/', './']);
/** A path segment of `..` alone is a dot segment, even percent-encoded: a client's URL names another path with it. */
const DOT_DOT_IN_A_SEGMENT = fc.constantFrom('../fuzz-dotdot', 'd/../../fuzz-dotdot', './..', '../', '..\\..');

/** One value of `kind` for a place `in` a request, drawn with the run's seed. */
function hostileValue(kind: HostileKind, index: number, where: StringPlace['in']): string {
  const pick = where !== 'body' && kind === 'long path' ? LONG_URL_PATH : where === 'path' && kind === 'dot-dot' ? DOT_DOT_IN_A_SEGMENT : HOSTILE[kind];
  return fc.sample(pick, { seed: FUZZ_SEED + index, numRuns: 1 })[0];
}

/** Where a string sits in a request. */
type Step = { prop: string } | { item: true } | { key: true } | { value: true } | { json: true };

export interface StringPlace {
  /** In words: `path sessionId`, `query path`, `body cwd`, `body {key}`, `body [].src`. */
  where: string;
  in: 'path' | 'query' | 'body';
  /** The path parameter's or query parameter's name; the body's steps. */
  name: string;
  steps: Step[];
  /** The value's own schema (a map's key: its propertyNames). */
  schema: Schema;
}

function typesOf(s: Schema): string[] {
  if (s.type !== undefined) return Array.isArray(s.type) ? s.type : [s.type];
  if (s.enum) return [...new Set(s.enum.map((v) => (v === null ? 'null' : typeof v)))];
  if (s.const !== undefined) return [typeof s.const];
  if (s.properties) return ['object'];
  return [];
}

/** Every string place of a body schema, at any depth. */
function bodyPlaces(schema: Schema, steps: Step[] = [], where = 'body'): StringPlace[] {
  if (schema['x-unserved'] !== undefined) return [];
  const out: StringPlace[] = [];
  const types = typesOf(schema);
  if (types.includes('string')) out.push({ where, in: 'body', name: where, steps, schema });
  if (types.includes('string') && typeof schema.contentSchema === 'object') out.push(...bodyPlaces(schema.contentSchema as Schema, [...steps, { json: true }], `${where} (JSON)`));
  for (const alt of schema.anyOf ?? []) out.push(...bodyPlaces(alt, steps, where));
  for (const [name, prop] of Object.entries(schema.properties ?? {})) out.push(...bodyPlaces(prop, [...steps, { prop: name }], `${where}.${name}`));
  if (typeof schema.additionalProperties === 'object') {
    out.push({ where: `${where}{key}`, in: 'body', name: `${where}{key}`, steps: [...steps, { key: true }], schema: (schema.propertyNames as Schema | undefined) ?? { type: 'string' } });
    out.push(...bodyPlaces(schema.additionalProperties, [...steps, { value: true }], `${where}{*}`));
  }
  if (schema.items) out.push(...bodyPlaces(schema.items, [...steps, { item: true }], `${where}[]`));
  return out.filter((p, i) => out.findIndex((q) => q.where === p.where) === i);
}

/** Every string place of a route: its path parameters, its string query parameters, its body's strings. */
export function stringPlaces(route: RouteContract, schemas: Record<string, unknown> = {}): StringPlace[] {
  const out: StringPlace[] = [...route.path.matchAll(/[:*](\w+)/g)].map(([, name]) => ({ where: `path ${name}`, in: 'path' as const, name, steps: [], schema: { type: 'string' } }));
  for (const p of route.params ?? []) {
    const schema = publishedSchema(p.schema, schemas);
    if (p.in === 'query' && typesOf(schema).includes('string')) out.push({ where: `query ${p.name}`, in: 'query', name: p.name, steps: [], schema });
  }
  if (route.body) out.push(...bodyPlaces(publishedSchema(route.body.schema, schemas)));
  return out;
}

/** The alternative of `schema` (itself, or one of its anyOf) that has what `step` goes into. */
function shapeFor(schema: Schema, step: Step): Schema {
  const has = (s: Schema): boolean => ('json' in step ? s.contentSchema !== undefined : 'item' in step ? s.items !== undefined : 'prop' in step ? s.properties?.[step.prop] !== undefined : typeof s.additionalProperties === 'object');
  return has(schema) ? schema : (schema.anyOf ?? []).find(has) ?? schema;
}

/** `value` put at `steps` of `node` (a copy), each container on the way made as its schema says. */
function placed(node: unknown, whole: Schema, steps: Step[], value: string): unknown {
  if (steps.length === 0) return value;
  const [step, ...rest] = steps;
  const schema = shapeFor(whole, step);
  if ('json' in step) return JSON.stringify(placed(JSON.parse(String(node)), schema.contentSchema as Schema, rest, value));
  if ('item' in step) {
    const list = Array.isArray(node) ? [...node] : [];
    list[0] = placed(list[0] ?? validValue(schema.items!), schema.items!, rest, value);
    return list;
  }
  const obj = node !== null && typeof node === 'object' && !Array.isArray(node) ? { ...(node as Record<string, unknown>) } : {};
  if ('prop' in step) {
    const sub = schema.properties![step.prop];
    obj[step.prop] = placed(obj[step.prop] ?? validValue(sub), sub, rest, value);
    return obj;
  }
  // A map: its one entry (the plainest is `f.txt`) gets the value as its key, or as its value.
  const entry = schema.additionalProperties as Schema;
  const [key, current] = Object.entries(obj)[0] ?? ['f.txt', validValue(entry)];
  delete obj[key];
  if ('key' in step) return { ...obj, [value]: current };
  return { ...obj, [key]: placed(current, entry, rest, value) };
}

// The test's own reading of a place's schema: what a value must be refused for, by the keywords a client reads.
const ajv = new Ajv({ strict: false, allowUnionTypes: true, validateFormats: false });

/** Why `value` must be refused at `place`: it breaks the place's declared schema, or is no path where a path is declared. */
export function mustRefuse(place: StringPlace, kind: HostileKind, value: string): string | null {
  if (place.schema['x-path'] === true && kind !== 'dot-dot') return `a declared path (x-path) given a ${kind}`;
  const stripped = JSON.parse(JSON.stringify(place.schema, (k, v) => (k.startsWith('x-') || k === 'contentSchema' ? undefined : v)));
  if (!ajv.validate(stripped, value)) return `breaks the declared schema of ${place.where} (${ajv.errorsText()})`;
  return null;
}

/** A route's request parts, as a suite gives them and a case changes one string of. */
export interface RouteBase {
  /** The path parameters (as the route's pattern names them), not yet encoded. */
  params: Record<string, string>;
  /** Query parameters the route needs beside the one a case tries. */
  query?: Record<string, string>;
  /** A body the route takes; default: the plainest its schema accepts. */
  body?: unknown;
}

export interface HostileCase {
  route: RouteContract;
  place: StringPlace;
  kind: HostileKind;
  value: string;
  request: FuzzRequest;
  /** Why it must be refused; null: taken or refused, as the route decides. */
  refusal: string | null;
}

function multipart(schema: Schema, body: Record<string, unknown>): { body: Buffer; type: string } {
  const boundary = 'hostileboundary';
  const parts = Object.entries(schema.properties ?? {}).map(([name, part]) => {
    const file = part.contentMediaType === 'application/octet-stream' ? `; filename="${name}"` : '';
    return `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${file}\r\n\r\n${String(body[name] ?? validValue(part))}\r\n`;
  });
  return { body: Buffer.from(parts.join('') + `--${boundary}--\r\n`), type: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Every case of `api`'s routes: each string place of each route (WebSockets left out) with each kind.
 * `base(name, route)` gives a route's parameters and, where the plainest body would be refused
 * anyway, a body it takes; null leaves the route out (the suite says why where it does).
 */
export function hostileCases(api: ApiContract, headers: Record<string, string>, base: (name: string, route: RouteContract) => RouteBase | null): HostileCase[] {
  const out: HostileCase[] = [];
  let index = 0;
  for (const [name, route] of Object.entries(api.routes)) {
    if (route.method === 'WS') continue;
    const b = base(name, route);
    if (b === null) continue;
    const bodySchema = route.body ? publishedSchema(route.body.schema, api.schemas) : null;
    for (const place of stringPlaces(route, api.schemas)) {
      for (const kind of HOSTILE_KINDS) {
        const value = hostileValue(kind, index++, place.in);
        const params = { ...b.params };
        const query = { ...b.query };
        let body = b.body ?? (bodySchema ? validValue(bodySchema) : undefined);
        if (place.in === 'path') params[place.name] = value;
        else if (place.in === 'query') query[place.name] = value;
        else body = placed(body, bodySchema!, place.steps, value);
        const path = route.path.replace(/[:*](\w+)/g, (_m, p: string) => {
          if (params[p] === undefined) throw new Error(`hostileCases: ${name} needs a value for :${p}`);
          // Dots too: a `..` segment would name another route before the broker saw it.
          return percentEncoded(params[p]).replace(/\./g, '%2E');
        });
        const qs = Object.entries(query).map(([k, v]) => `${k}=${percentEncoded(v)}`).join('&');
        const request: FuzzRequest = { method: route.method, path: path + (qs ? `?${qs}` : ''), headers: { ...headers } };
        if (body !== undefined && route.body?.contentType === 'multipart/form-data') {
          const m = multipart(bodySchema!, body as Record<string, unknown>);
          request.body = m.body;
          request.headers!['content-type'] = m.type;
        } else if (body !== undefined) {
          request.body = JSON.stringify(body);
          request.headers!['content-type'] = 'application/json';
        }
        out.push({ route, place, kind, value, request, refusal: mustRefuse(place, kind, value) });
      }
    }
  }
  return out;
}

/** What a suite does beside the target's snapshot: end what a taken call made, and check its sandbox still works. */
export interface HostileHooks {
  settle?(c: HostileCase, res: HttpResult): Promise<void>;
  usable(): Promise<void>;
}

function brief(c: HostileCase): string {
  const v = c.value.length > 40 ? `${JSON.stringify(c.value.slice(0, 40))}...(${c.value.length})` : JSON.stringify(c.value);
  return `${c.route.method} ${c.route.path} ${c.place.where} = ${c.kind} ${v}`;
}

/** One case, as the module's comment says; throws on any breach. */
export async function hostileCase<S>(t: FuzzTarget<S>, c: HostileCase, hooks: HostileHooks): Promise<HttpResult> {
  const route = `${c.route.method} ${c.route.path} (${c.place.where})`;
  const before = await t.snapshot();
  const res = await t.client.send(c.request);
  if (res === 'hang') {
    t.report.count(route, 'hang');
    t.report.fail(`no answer within ${REQUEST_BOUND_MS} ms: ${brief(c)}`);
    throw new Error(`no answer within ${REQUEST_BOUND_MS} ms (seed ${FUZZ_SEED}): ${brief(c)}`);
  }
  t.report.count(route, res.status);
  const fail = (why: string): never => {
    const what = `${why}: ${brief(c)} -> ${res.status} ${res.text.slice(0, 300)}`;
    t.report.fail(what);
    throw new Error(`(seed ${FUZZ_SEED}) ${what}`);
  };
  const declaredUnserved = res.status === 501 && c.route.errors?.[501] !== undefined;
  if (res.status >= 400 && !declaredUnserved) {
    const wrong = notARefusal(res, t.envelope, c.request.method);
    if (wrong) fail(`not a refusal in the ${t.envelope} envelope (${wrong})`);
  }
  if (res.status >= 400) {
    const after = await t.snapshot();
    if (JSON.stringify(after) !== JSON.stringify(before)) fail(`a refusal changed the state: ${JSON.stringify(before).slice(0, 400)} -> ${JSON.stringify(after).slice(0, 400)}`);
    return res;
  }
  if (c.refusal !== null) fail(`taken, but must be refused: ${c.refusal}`);
  await hooks.settle?.(c, res);
  await hooks.usable();
  return res;
}

/** Every case of `cases`, in turn: each place with each kind, all of them (no sampling: none is left untried). */
export async function everyHostileCase<S>(t: FuzzTarget<S>, cases: readonly HostileCase[], hooks: HostileHooks): Promise<void> {
  for (const c of cases) await hostileCase(t, c, hooks);
  await hooks.usable();
}
