/**
 * Checks driven by a declared schema (src/http/schemaCheck.ts): the first fault in the schema's order
 * is refused in the words of the schema where it failed, a size beyond `x-max-bytes` is a 413, and a
 * domain check runs where its keyword stands, before the entries' own schema.
 * @backend any
 */
import { Type } from '@sinclair/typebox';
import { BadRequestError, PayloadTooLargeError } from '../../src/common/errors';
import { addDomainCheck, compileCheck, publishedSchema } from '../../src/http/schemaCheck';

function refusal(check: (v: unknown) => unknown, value: unknown): { kind: string; detail: string } {
  try {
    check(value);
  } catch (err) {
    const kind = err instanceof PayloadTooLargeError ? '413' : err instanceof BadRequestError ? '400' : 'other';
    return { kind, detail: (err as Error).message };
  }
  return { kind: 'none', detail: '' };
}

addDomainCheck('x-no-dots', (entries) => {
  for (const key of Object.keys(entries)) if (key.includes('.')) throw new BadRequestError(`key '${key}' has a dot`);
});

const check = compileCheck(
  Type.Object(
    {
      name: Type.String({ minLength: 1, 'x-max-bytes': 4, 'x-refusal': { type: "'{field}' must be a string, got {a}", minLength: "'{field}' is empty", 'x-max-bytes': "'{field}' is over {limit} bytes" } }),
      sizes: Type.Optional(Type.Array(Type.Number({ exclusiveMinimum: 0, 'x-refusal': { '*': "'{field}' must be positive, got {json}" } }))),
      tags: Type.Optional(Type.Record(Type.String(), Type.Integer(), { 'x-no-dots': true })),
    },
    { 'x-refusal': { type: 'the body must be an object, got {a}', required: "'{missing}' is required" } },
  ),
);

describe('compileCheck', () => {
  it('returns the value when it fits', () => {
    const value = { name: 'ab', sizes: [1, 2.5], extra: true };
    expect(check(value)).toBe(value);
  });

  it.each([
    [undefined, '400', 'the body must be an object, got an empty body'],
    [[], '400', 'the body must be an object, got an array'],
    [{ sizes: [0] }, '400', "'name' is required"],
    [{ name: 5, sizes: [0] }, '400', "'name' must be a string, got a number"],
    [{ name: '' }, '400', "'name' is empty"],
    [{ name: 'ééé' }, '413', "'name' is over 4 bytes"],
    [{ name: 'a', sizes: [1, -2] }, '400', "'sizes[1]' must be positive, got -2"],
    [{ name: 'a', sizes: [1, '3'] }, '400', '\'sizes[1]\' must be positive, got "3"'],
  ])('refuses %j with the first fault, in its schema\'s words', (value, kind, detail) => {
    expect(refusal(check, value)).toEqual({ kind, detail });
  });

  it("runs a domain check where its keyword stands: before the entries' own schema", () => {
    expect(refusal(check, { name: 'a', tags: { 'a.b': 'not an integer' } })).toEqual({ kind: '400', detail: "key 'a.b' has a dot" });
    expect(refusal(check, { name: 'a', tags: { ab: 'x' } }).kind).toBe('400');
    expect(check({ name: 'a', tags: { ab: 1 } })).toEqual({ name: 'a', tags: { ab: 1 } });
  });
});

describe('publishedSchema', () => {
  it("drops the checks' keywords at any depth and keeps the rest, leaving the checked schema as it was", () => {
    const schema = Type.Object({ name: Type.String({ 'x-max-bytes': 4, 'x-refusal': { '*': 'no' }, description: 'a name' }), tags: Type.Record(Type.String(), Type.Integer(), { 'x-no-dots': true }) }, { 'x-refusal': { type: 'no' } });
    const shown = JSON.parse(JSON.stringify(publishedSchema(schema)));
    expect(shown).toEqual({ type: 'object', required: ['name', 'tags'], properties: { name: { type: 'string', description: 'a name' }, tags: { type: 'object', patternProperties: { '^(.*)$': { type: 'integer' } } } } });
    expect(schema.properties.name['x-refusal']).toEqual({ '*': 'no' });
  });
});

describe('the keywords of fields the broker words or does not serve', () => {
  const fields = compileCheck(
    Type.Object({
      note: Type.Optional(Type.String({ 'x-not-blank': true, 'x-refusal': { 'x-not-blank': "'{field}' must not be empty" } })),
      uid: Type.Optional(Type.Unsafe({ 'x-unserved': { as: 'unsupported' }, 'x-refusal': { 'x-unserved': "'{field}' is not supported" } })),
      volumes: Type.Optional(Type.Unsafe({ 'x-unserved': { as: 'not_implemented', emptyIsAbsent: true }, 'x-refusal': { 'x-unserved': 'volumes are not served' } })),
    }),
  );
  const kind = (value: unknown): string => {
    try {
      fields(value);
      return 'none';
    } catch (err) {
      return `${(err as Error).constructor.name}: ${(err as Error).message}`;
    }
  };

  it('refuses a string of white space only as blank', () => {
    expect(kind({ note: ' \n\t' })).toBe("BadRequestError: 'note' must not be empty");
    expect(kind({ note: ' x ' })).toBe('none');
  });

  it('refuses an unserved field by its kind: unsupported (400) or not implemented (501), null and (when asked) empty being absent', () => {
    expect(kind({ uid: 0 })).toBe("NotSupportedError: 'uid' is not supported");
    expect(kind({ uid: null })).toBe('none');
    expect(kind({ volumes: [{}] })).toBe('NotImplementedError: volumes are not served');
    expect([kind({ volumes: [] }), kind({ volumes: {} }), kind({ volumes: false }), kind({ volumes: null })]).toEqual(['none', 'none', 'none', 'none']);
  });
});

describe('a length as JavaScript counts it, and what the document shows for a field a domain check reads', () => {
  it("counts UTF-16 units, as the hand-written checks' .length did (an emoji is two)", () => {
    const check = compileCheck(Type.Object({ name: Type.String({ 'x-max-length': 4, 'x-refusal': { 'x-max-length': "'{field}' is over {limit} characters" } }) }));
    expect(check({ name: 'abcd' })).toEqual({ name: 'abcd' });
    expect(refusal(check, { name: '😀😀😀' })).toEqual({ kind: '400', detail: "'name' is over 4 characters" });
  });

  it('shows x-published in place of the schema it sits on, which checks nothing itself', () => {
    const schema = Type.Object({ access: Type.Unsafe({ 'x-published': { $ref: '#/components/schemas/Access' } }) });
    expect(JSON.parse(JSON.stringify(publishedSchema(schema))).properties.access).toEqual({ $ref: '#/components/schemas/Access' });
    expect(compileCheck(schema)({ access: 'anything' })).toEqual({ access: 'anything' });
  });
});
