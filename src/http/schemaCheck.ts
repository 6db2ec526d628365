/**
 * Input checks driven by a route's JSON Schema (ajv). A value either fits, and comes back typed as
 * its schema says (TypeBox's Static), or is refused with the first fault ajv meets, in the schema's
 * order: the `x-refusal` of the schema where it failed words the refusal, by keyword (`type`,
 * `required`, `maximum`...) or for any (`*`), so a declared schema answers the same 400s as the
 * hand-written checks it replaces. In a refusal, `{field}` is where it failed (`startup_commands[1]`),
 * `{top}` the body's own field or item it is in (`startup_commands`), `{a}` what was sent in words (`a string`, `null`), `{json}` its JSON, `{value}` its text, `{limit}`
 * and `{missing}` what the keyword names.
 *
 * Rules no JSON Schema states are keywords: `x-max-bytes` (a string's UTF-8 size, a 413),
 * `x-not-blank` (a string with more than white space), `x-max-length` (a string's length in UTF-16
 * units, as JavaScript counts it), `x-path` (a path a file system can take: common/pathText.ts; a
 * refusal's `{pathFault}` says what is wrong with it, `{short}` quotes its start), `x-no-nul` (a
 * string without NUL bytes), `x-not-empty` (a list of one item or more), `x-published` (what the
 * document shows for a field whose check is
 * a domain check's), `x-unserved` (a field the broker does not
 * serve: any value but null is refused as unsupported, a 400 NOT_SUPPORTED, or as not implemented,
 * a 501), and domain checks (addDomainCheck): a function that throws the broker's own error, run in
 * the schema's order like the rest. Four are every API's: `x-known-fields` (an object's unknown
 * fields, all named), `x-string-map` (an object of strings without NUL bytes), `x-key-pattern` (an
 * object's keys) and `x-unserved-keys` (fields the broker does not serve, a 501, once the rest passed);
 * an API adds its own. These keywords are the broker's own working: publishedSchema()
 * takes them out of the schemas /openapi.json shows.
 */
import Ajv, { type ErrorObject } from 'ajv';
import type { Static, TSchema } from '@sinclair/typebox';
import { BadRequestError, NotImplementedError, NotSupportedError, PayloadTooLargeError } from '../common/errors';
import { describe } from '../common/inWords';
import { pathTextFault } from '../common/pathText';

const REFUSAL = 'x-refusal';
const MAX_BYTES = 'x-max-bytes';
const NOT_BLANK = 'x-not-blank';
const UNSERVED = 'x-unserved';
const MAX_UNITS = 'x-max-length';
const NO_NUL = 'x-no-nul';
const NOT_EMPTY = 'x-not-empty';
const PUBLISHED = 'x-published';
const PATH = 'x-path';
/** The keywords only these checks read: their wording and their rules, never a client's business. */
const CHECK_KEYWORDS = new Set([REFUSAL, MAX_BYTES, NOT_BLANK, UNSERVED, MAX_UNITS, PATH, NO_NUL, NOT_EMPTY]);

/**
 * `x-unserved`: how a field the broker does not serve is refused. `emptyIsAbsent`: false, an empty
 * list or object counts as not sent (null always does).
 */
export interface Unserved {
  as: 'unsupported' | 'not_implemented';
  emptyIsAbsent?: boolean;
}

function sent(value: unknown, emptyIsAbsent: boolean): boolean {
  if (value === null) return false;
  if (!emptyIsAbsent) return true;
  if (value === false) return false;
  if (Array.isArray(value)) return value.length > 0;
  return typeof value !== 'object' || Object.keys(value).length > 0;
}

// verbose: a refusal reads the failing schema's words and the value sent. Unknown fields stay (no removeAdditional).
const ajv = new Ajv({ allErrors: false, verbose: true, allowUnionTypes: true });
ajv.addKeyword({ keyword: REFUSAL, schemaType: 'object' });
/** An RFC 3339 time (`2025-11-16T14:30:45Z`, `...45.5+02:00`) that names a real instant. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
ajv.addFormat('date-time', (text: string) => RFC3339.test(text) && !Number.isNaN(Date.parse(text)));
ajv.addKeyword({ keyword: MAX_BYTES, type: 'string', schemaType: 'number', errors: false, validate: (limit: number, text: string) => Buffer.byteLength(text) <= limit });
ajv.addKeyword({ keyword: NOT_BLANK, type: 'string', schemaType: 'boolean', errors: false, validate: (on: boolean, text: string) => !on || text.trim() !== '' });
// A string's length as JavaScript counts it (UTF-16 units), where `maxLength` counts code points.
ajv.addKeyword({ keyword: PATH, type: 'string', schemaType: 'boolean', errors: false, validate: (on: boolean, text: string) => !on || pathTextFault(text) === null });
ajv.addKeyword({ keyword: MAX_UNITS, type: 'string', schemaType: 'number', errors: false, validate: (limit: number, text: string) => text.length <= limit });
// Where a pattern would show in the document (and the document shows a plain string or list).
ajv.addKeyword({ keyword: NO_NUL, type: 'string', schemaType: 'boolean', errors: false, validate: (on: boolean, text: string) => !on || !text.includes('\0') });
ajv.addKeyword({ keyword: NOT_EMPTY, type: 'array', schemaType: 'boolean', errors: false, validate: (on: boolean, list: unknown[]) => !on || list.length > 0 });
// What the document shows in place of a field the check takes as it comes (a domain check words its faults).
ajv.addKeyword({ keyword: PUBLISHED, schemaType: 'object' });
ajv.addKeyword({ keyword: UNSERVED, schemaType: 'object', errors: false, validate: (rule: Unserved, value: unknown) => !sent(value, rule.emptyIsAbsent === true) });

/**
 * A keyword `name: <rule>` on object schemas (`true`, or the rule's own terms): `check` throws the
 * refusal (a BrokerError) or returns. It gets the object, where it is (`field`: `image`, '' for the
 * body itself) and the rule. It runs before the object's own field checks (required ones included),
 * so it words the faults of each entry; `after`: once they all passed.
 */
export function addDomainCheck<R = true>(name: string, check: (value: Record<string, unknown>, field: string, rule: R) => void, { after = false }: { after?: boolean } = {}): void {
  CHECK_KEYWORDS.add(name);
  const validate = (rule: R, value: unknown, _parent: unknown, where?: { instancePath: string }): boolean => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) check(value as Record<string, unknown>, fieldName(where?.instancePath ?? ''), rule);
    return true;
  };
  ajv.addKeyword(after ? { keyword: name, post: true, validate } : { keyword: name, type: 'object', before: 'required', validate });
}

/** `/startup_commands/1` -> `startup_commands[1]`. */
function fieldName(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((part, i) => (i > 0 && /^\d+$/.test(part) ? `[${part}]` : `${i > 0 ? '.' : ''}${part.replace(/~1/g, '/').replace(/~0/g, '~')}`))
    .join('');
}

function refusal(e: ErrorObject): string {
  const words = ((e.parentSchema as Record<string, unknown> | undefined)?.[REFUSAL] ?? {}) as Record<string, string>;
  const template = words[e.keyword] ?? words['*'] ?? `'{field}' ${e.message ?? 'is not valid'}`;
  const facts: Record<string, () => string> = {
    field: () => fieldName(e.instancePath),
    top: () => fieldName(e.instancePath.split('/').slice(0, 2).join('/')),
    a: () => describe(e.data),
    json: () => JSON.stringify(e.data),
    value: () => String(e.data),
    limit: () => String((e.params as { limit?: unknown }).limit ?? e.schema),
    missing: () => String((e.params as { missingProperty?: unknown }).missingProperty),
    pathFault: () => pathTextFault(String(e.data)) ?? 'is not a path',
    short: () => JSON.stringify(String(e.data).length > 24 ? `${String(e.data).slice(0, 24)}...` : e.data),
  };
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => facts[name]?.() ?? whole);
}

/** Compiles `schema` once; the check returns the value typed, or throws its refusal (400, or 413 for a size). */
export function compileCheck<T extends TSchema>(schema: T): (value: unknown) => Static<T> {
  const validate = ajv.compile(schema);
  return (value) => {
    if (validate(value)) return value as Static<T>;
    const e = validate.errors![0];
    if (e.keyword === MAX_BYTES) throw new PayloadTooLargeError(refusal(e));
    if (e.keyword === UNSERVED) throw (e.schema as Unserved).as === 'unsupported' ? new NotSupportedError(refusal(e)) : new NotImplementedError(refusal(e));
    throw new BadRequestError(refusal(e));
  };
}

/** A copy of `schema` as a document shows it: without the keywords of these checks, at any depth. */
export function publishedSchema<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map(publishedSchema) as T;
  if (schema === null || typeof schema !== 'object') return schema;
  if (PUBLISHED in schema) return (schema as Record<string, unknown>)[PUBLISHED] as T;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) if (!CHECK_KEYWORDS.has(key)) out[key] = publishedSchema(value);
  return out as T;
}

/** `{field}`, `{unknown}`, `{key}` in a domain check's refusal; a function replacement, so a key's `$` stays as sent. */
function worded(template: string, facts: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => facts[name] ?? whole);
}

addDomainCheck<{ known: readonly string[]; refusal: string }>('x-known-fields', (value, field, { known, refusal }) => {
  const unknown = Object.keys(value).filter((k) => !known.includes(k));
  if (unknown.length > 0) throw new BadRequestError(worded(refusal, { field, unknown: unknown.join(', ') }));
});

addDomainCheck('x-string-map', (value, field) => {
  for (const [key, text] of Object.entries(value)) {
    if (typeof text !== 'string' || text.includes('\0')) throw new BadRequestError(`${field}.${key} must be a string without NUL bytes`);
  }
});

const KEY_PATTERNS = new Map<string, RegExp>();
addDomainCheck<{ pattern: string; refusal: string }>('x-key-pattern', (value, field, { pattern, refusal }) => {
  let re = KEY_PATTERNS.get(pattern);
  if (!re) KEY_PATTERNS.set(pattern, (re = new RegExp(pattern, 'u')));
  for (const key of Object.keys(value)) if (!re.test(key)) throw new BadRequestError(worded(refusal, { field, key }));
});

addDomainCheck<Record<string, string>>('x-unserved-keys', (value, _field, refusals) => {
  for (const [key, refusal] of Object.entries(refusals)) if (Object.hasOwn(value, key)) throw new NotImplementedError(refusal);
}, { after: true });
