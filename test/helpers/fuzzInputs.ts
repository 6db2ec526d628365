/**
 * Inputs a route must refuse, drawn from its contract (a TypeBox/JSON schema) with fast-check:
 *
 * - `invalidBody(schema)`: a body that breaks the schema in one place (a wrong type, a required field
 *   missing, a value past a bound, a NUL where the pattern forbids it, a string past `x-max-bytes`),
 *   the rest a valid body, and sometimes extra fields beside it; never a body the schema accepts, so
 *   nothing a fuzz case sends is ever run;
 * - `junkBody`: bytes that are no JSON object (broken JSON, invalid UTF-8, deep nesting, lone tokens);
 * - `nastyText`: unicode and control characters; `nastyOrHugeText` with huge strings too;
 * - `pathTrick`: paths that leave a working directory (`..`, absolute, NUL, through a symlink).
 *
 * Fields marked `x-unserved` are left out: a value there asks for a feature the broker does not
 * serve, which is no bad input.
 */
import fc from 'fast-check';
import type { RouteContract } from '../../src/http/contract';

/** The JSON Schema keywords these generators read (TypeBox schemas are plain JSON Schema objects). */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  minProperties?: number;
  'x-max-bytes'?: number;
  'x-not-blank'?: boolean;
  'x-unserved'?: unknown;
  [key: string]: unknown;
}

/** The parts of an API's document these generators read: its routes' bodies and its named schemas. */
export interface DeclaredApi {
  readonly operations: Record<string, { readonly body?: { readonly schema: unknown } }>;
  readonly schemas?: Record<string, unknown>;
}

/**
 * A schema as the API's document publishes it: each `$ref` to one of its named schemas resolved,
 * and each field the contract checks in code (`x-published`, see schemaCheck.ts) replaced by the
 * schema the document shows for it, which is the one a client (and so the fuzzer) writes against.
 */
export function publishedSchema(schema: unknown, schemas: Record<string, unknown> = {}): Schema {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const fields = node as Record<string, unknown>;
    if ('x-published' in fields) return walk(fields['x-published']);
    const ref = typeof fields.$ref === 'string' ? /^#\/components\/schemas\/(.+)$/.exec(fields.$ref) : null;
    if (ref && schemas[ref[1]] !== undefined) return walk(schemas[ref[1]]);
    return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, walk(v)]));
  };
  return walk(schema) as Schema;
}

/** The published body of one route (`METHOD /path`) of an API's document. */
export function declaredBody(doc: DeclaredApi, key: string): Schema {
  const body = doc.operations[key]?.body;
  if (!body) throw new Error(`the document declares no body for ${key}`);
  return publishedSchema(body.schema, doc.schemas);
}

type JsonType = 'string' | 'number' | 'integer' | 'boolean' | 'null' | 'object' | 'array';

/** Unicode and control characters: NUL, C0/C1, bidi overrides, surrogate halves, emoji, combining marks. */
export const nastyText: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('\u0000', '\u0007\u001b[2J', '\r\n\r\n', '\u0085\u2028\u2029', '\u202e\u202dx', '\ud800', '\udfff', '😀'.repeat(40), 'e\u0301\u0301\u0301', '\ufeff', '%00', '%2e%2e', '${HOME}', '$(id)', '`id`'),
);

/** `text` percent-encoded for a URL (a lone surrogate, which has no UTF-8, as U+FFFD). */
export function percentEncoded(text: string): string {
  return encodeURIComponent(text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));
}

/** `nastyText` percent-encoded for a URL. */
export const nastyUrlText: fc.Arbitrary<string> = nastyText.map(percentEncoded);

/** `nastyText`, and strings far past any field's use (tens of thousands of characters): for bodies, not URLs. */
export const nastyOrHugeText: fc.Arbitrary<string> = fc.oneof(nastyText, fc.integer({ min: 10_000, max: 70_000 }).map((n) => 'é'.repeat(n)));

/** A value of every JSON type but `allowed` ('number' allows integers; 'integer' is refused a fraction). */
export function wrongType(allowed: readonly string[]): fc.Arbitrary<unknown> {
  const pick: fc.Arbitrary<unknown>[] = [];
  const ok = (t: JsonType): boolean => allowed.includes(t) || (t === 'integer' && allowed.includes('number'));
  if (!ok('string')) pick.push(nastyOrHugeText, fc.constantFrom('1', 'true', 'null', '{}', '[]', ''));
  if (!ok('integer') && !ok('number')) pick.push(fc.integer(), fc.constantFrom(0, -1, 1e300, Number.MAX_SAFE_INTEGER + 2));
  if (!ok('number')) pick.push(fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)));
  if (!ok('boolean')) pick.push(fc.boolean());
  if (!ok('null')) pick.push(fc.constant(null));
  if (!ok('array')) pick.push(fc.array(fc.oneof(fc.string({ maxLength: 4 }), fc.integer()), { maxLength: 3 }));
  if (!ok('object')) pick.push(fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 }));
  if (pick.length === 0) throw new Error(`no wrong type for ${allowed.join('|')}`);
  return fc.oneof(...pick);
}

function typesOf(schema: Schema): string[] {
  if (schema.type !== undefined) return Array.isArray(schema.type) ? schema.type : [schema.type];
  if (schema.anyOf) return schema.anyOf.flatMap(typesOf);
  if (schema.enum) return [...new Set(schema.enum.map((v) => (v === null ? 'null' : typeof v)))];
  if (schema.const !== undefined) return [schema.const === null ? 'null' : typeof schema.const];
  if (schema.properties) return ['object'];
  return [];
}

const unserved = (s: Schema): boolean => s['x-unserved'] !== undefined;

/** A value the schema accepts: the plainest one (the first enum, the lowest number, required fields only). */
export function validValue(schema: Schema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf) return validValue(schema.anyOf[0]);
  const types = typesOf(schema);
  const type = types.find((t) => t !== 'null') ?? types[0];
  switch (type) {
    case 'string':
      // A JSON document in a string (an upload's metadata): the plainest its own schema takes.
      if (typeof schema.contentSchema === 'object') return JSON.stringify(validValue(schema.contentSchema as Schema));
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    case 'integer':
    case 'number':
      if (schema.minimum !== undefined) return Math.ceil(schema.minimum);
      if (schema.exclusiveMinimum !== undefined) return Math.floor(schema.exclusiveMinimum) + 1;
      return 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array':
      return schema.minItems ? Array.from({ length: schema.minItems }, () => validValue(schema.items ?? {})) : [];
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) out[name] = validValue(schema.properties?.[name] ?? {});
      if (schema.minProperties && Object.keys(out).length === 0 && typeof schema.additionalProperties === 'object') {
        out['f.txt'] = validValue(schema.additionalProperties);
      }
      return out;
    }
    default:
      return null;
  }
}

/** Values the schema refuses, each broken in one way its keywords state. */
export function invalidValue(schema: Schema): fc.Arbitrary<unknown> {
  const types = typesOf(schema);
  const picks: fc.Arbitrary<unknown>[] = [];
  if (types.length > 0) picks.push(wrongType(types));
  if (schema.enum) {
    const values = schema.enum;
    picks.push(fc.oneof(nastyOrHugeText, fc.constantFrom('BASH', 'Python', ' bash', 'bash\u0000')).filter((v) => !values.includes(v)));
  }
  if (types.includes('string')) {
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test('a\u0000b')) picks.push(fc.constantFrom('a\u0000b', '\u0000', 'x'.repeat(100) + '\u0000'));
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test('\u0007')) picks.push(fc.constantFrom('\u0007', 'a\u001fb', '\u007f'));
    if (schema.minLength) picks.push(fc.constant(''));
    if (schema.maxLength !== undefined) picks.push(fc.integer({ min: schema.maxLength + 1, max: schema.maxLength + 5000 }).map((n) => 'y'.repeat(n)));
    if (schema['x-not-blank']) picks.push(fc.constantFrom('', ' ', '\n\t  ', '\r\n'));
    const maxBytes = schema['x-max-bytes'];
    if (maxBytes !== undefined) picks.push(fc.integer({ min: maxBytes + 1, max: maxBytes * 3 }).map((n) => 'z'.repeat(n)));
  }
  if (types.includes('integer') && !types.includes('number')) picks.push(fc.double({ min: 0.01, max: 1e6, noNaN: true }).filter((d) => !Number.isInteger(d)));
  if (types.includes('integer') || types.includes('number')) {
    if (schema.minimum !== undefined) picks.push(fc.integer({ min: -1e9, max: Math.ceil(schema.minimum) - 1 }));
    if (schema.exclusiveMinimum !== undefined) picks.push(fc.constantFrom(schema.exclusiveMinimum, schema.exclusiveMinimum - 1, -1e308));
    if (schema.maximum !== undefined) picks.push(fc.constantFrom(Math.floor(schema.maximum) + 1, 1e308));
  }
  if (types.includes('array')) {
    if (schema.minItems) picks.push(fc.constant([]));
    if (schema.items) {
      const item = schema.items;
      picks.push(fc.tuple(fc.nat({ max: 2 }), invalidValue(item)).map(([at, bad]) => [...Array.from({ length: at }, () => validValue(item)), bad]));
    }
  }
  if (types.includes('object')) {
    if (schema.properties && Object.keys(schema.properties).length > 0) picks.push(invalidObject(schema));
    if (schema.minProperties) picks.push(fc.constant({}));
    if (typeof schema.additionalProperties === 'object') {
      const entry = schema.additionalProperties;
      picks.push(fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), invalidValue(entry)).map(([k, bad]) => ({ [k]: bad })));
    }
  }
  if (picks.length === 0) throw new Error(`no invalid value for ${JSON.stringify(schema).slice(0, 200)}`);
  return fc.oneof(...picks);
}

/**
 * An object with one required field missing or one field broken; the rest valid (`base`, or the
 * plainest valid object), extra fields maybe.
 */
function invalidObject(schema: Schema, base = validValue(schema) as Record<string, unknown>): fc.Arbitrary<Record<string, unknown>> {
  const props = Object.entries(schema.properties ?? {}).filter(([, s]) => !unserved(s));
  const ways: fc.Arbitrary<Record<string, unknown>>[] = [];
  const required = schema.required ?? [];
  if (required.length > 0) {
    ways.push(fc.constantFrom(...required).map((name) => Object.fromEntries(Object.entries(base).filter(([k]) => k !== name))));
  }
  for (const [name, prop] of props) {
    ways.push(invalidValue(prop).map((bad) => ({ ...base, [name]: bad })));
  }
  const known = new Set(Object.keys(schema.properties ?? {}));
  const extra = (minKeys: number) =>
    fc.dictionary(
      fc.oneof(fc.string({ minLength: 1, maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '')).filter((k) => !known.has(k)),
      fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.constant(null)),
      { minKeys, maxKeys: 3 },
    );
  // Where unknown fields are refused, they alone break a valid body.
  if (schema.additionalProperties === false) ways.push(extra(1).map((x) => ({ ...base, ...x })));
  const broken = fc.oneof(...ways);
  return fc.tuple(broken, fc.option(extra(0), { freq: 2 })).map(([b, x]) => (x ? { ...x, ...b } : b));
}

/**
 * Every way the body can be refused: breaking its schema, or no JSON of the right kind at all.
 * `base`: a valid body to break one field of, where the plainest one would be refused anyway.
 */
export function invalidBody(schema: Schema, base?: Record<string, unknown>): fc.Arbitrary<string | Buffer> {
  const broken = base ? fc.oneof(invalidObject(schema, base), wrongType(typesOf(schema))) : invalidValue(schema);
  return fc.oneof({ weight: 3, arbitrary: broken.map((v) => JSON.stringify(v)) }, { weight: 1, arbitrary: junkBody });
}

/** Nested arrays or objects far deeper than any client sends, balanced or not. */
export const deepNesting = fc.tuple(fc.integer({ min: 1, max: 20_000 }), fc.constantFrom('[', '{"a":'), fc.boolean()).map(([depth, open, balanced]) => {
  const close = open === '[' ? ']' : '}';
  return open.repeat(depth) + '1' + (balanced ? close.repeat(depth) : close.repeat(depth >> 1));
});

/** Bytes that are not valid UTF-8, alone and between `open` and `close` (inside a JSON string). */
export function invalidUtf8(open: string, close: string): fc.Arbitrary<Buffer> {
  return fc
    .tuple(fc.uint8Array({ maxLength: 20 }), fc.constantFrom(0x80, 0xc0, 0xc3, 0xe2, 0xed, 0xf0, 0xf8, 0xff), fc.boolean())
    .map(([tail, bad, wrap]) => {
      const raw = Buffer.concat([Buffer.from(tail), Buffer.from([bad])]);
      return wrap ? Buffer.concat([Buffer.from(open), raw, Buffer.from(close)]) : raw;
    });
}

/** Bodies no route takes as a JSON object: broken JSON, other JSON values, bytes. */
export const junkBody: fc.Arbitrary<string | Buffer> = fc.oneof(
  fc.constantFrom('{', '}', '[', '"', 'nul', 'NaN', '1e999', '-', '{"a":1,}', '\ufeff{}', '{"a":1}{"b":2}', '{"a":"\\ud800"', '{"a":"\\u0000"}x', ' '),
  fc.constantFrom('null', '[]', '1', '"text"', 'true', '[{}]'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }).filter((s) => !isJsonObject(s)),
  fc.uint8Array({ minLength: 1, maxLength: 200 }).map((a) => Buffer.from(a)).filter((b) => !isJsonObject(b.toString())),
  // in a JSON array: no route takes one as its body object
  invalidUtf8('["', '"]'),
  // a balanced object is one a lenient route takes (its unknown field ignored)
  deepNesting.filter((text) => !isJsonObject(text)),
);

/** Bodies that are no JSON at all (a route that takes any JSON, and ignores it, refuses these). */
export const notJsonBody: fc.Arbitrary<string | Buffer> = junkBody.filter((b) => !isJson(b.toString()));

export function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function isJsonObject(text: string): boolean {
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

/** A path segment no route has: encodings, prototype names, very long, plain random. */
export const badSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('%zz', '%', '%2F', '%2e%2e%2f', '%00', '%C3%28', '%ff', '__proto__', 'constructor', 'toString', 'null', '0', '-1'),
  // `..`, `.` and their %2e spellings are dot segments: the URL they are in names another path
  fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !/^\.\.?$/.test(s)).map(encodeURIComponent),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }).filter((s) => !/^\.\.?$/.test(s)).map(encodeURIComponent),
  fc.integer({ min: 100, max: 4000 }).map((n) => 'a'.repeat(n)),
  fc.stringMatching(/^[0-9a-f]{32}$/),
);

/**
 * Paths that must not reach outside a working directory: `..` climbs, absolute paths, NUL, and
 * `through`: paths the test made that leave it through its own symlinks.
 */
export function pathTrick(through: readonly string[] = []): fc.Arbitrary<string> {
  const picks: fc.Arbitrary<string>[] = [
    fc.constantFrom('..', '../x', 'a/../../x', '../../../../etc/passwd', './../x', 'a/./../../x', '/etc/passwd', '/etc/shadow', '/', '/proc/self/environ', '/root/.bashrc', '/tmp/../etc/hosts'),
    fc.constantFrom('a\u0000b', '\u0000', 'ok.txt\u0000../../x', 'x\u0000/..'),
    fc.tuple(fc.integer({ min: 1, max: 12 }), nastyText.map((s) => s.replace(/\//g, '_').slice(0, 20))).map(([up, tail]) => '../'.repeat(up) + tail),
  ];
  if (through.length > 0) picks.push(fc.constantFrom(...through));
  return fc.oneof(...picks);
}

/** A route under one resource's id, as a fuzz case sends it: `path` is `${base}/${id}${tail}`. */
export interface IdRoute {
  readonly method: string;
  readonly tail: string;
  readonly body: string | undefined;
}

/**
 * Every route a contract declares under `${base}/:${idParam}` (WebSocket upgrades left out), so a route added
 * to the contract is fuzzed without a list to keep: its other path parameters filled from `params`,
 * and a body from `bodies` (by route name) where it declares a required one. A route that needs a
 * body or a parameter the caller did not give is an error here, not a route left untried.
 */
export function idRoutes(routes: Record<string, RouteContract>, base: string, bodies: Record<string, string> = {}, params: Record<string, string> = {}, idParam = 'id'): IdRoute[] {
  const out: IdRoute[] = [];
  const under = `${base}/:${idParam}`;
  for (const [name, route] of Object.entries(routes)) {
    if (route.method === 'WS' || (route.path !== under && !route.path.startsWith(`${under}/`))) continue;
    const tail = route.path.slice(under.length).replace(/:(\w+)/g, (_, p: string) => {
      if (params[p] === undefined) throw new Error(`idRoutes: ${name} needs a value for :${p}`);
      return params[p];
    });
    const needsBody = route.body !== undefined && route.body.required !== false;
    if (needsBody && bodies[name] === undefined) throw new Error(`idRoutes: ${name} declares a body; give one`);
    out.push({ method: route.method, tail, body: bodies[name] });
  }
  return out;
}
