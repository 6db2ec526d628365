/**
 * execd's request bodies, as their routes check them (execdInput.ts) and the contract shows them
 * (execdContract.ts): each field refused in the words its 400s have always had.
 *
 * BROKER_MAX_COMMAND_BYTES joins the command schemas the routes check with (`limits`); the
 * document's copies are built without it.
 */
import { Type } from '@sinclair/typebox';
import type { Schema } from '../../http/openApiTypes';
import type { CommandLimits } from '../../core/session/sessionInput';
import { commandSchema, NO_NUL, optionalPath, orNull, PATH_KEYS } from '../contractParts';

export type ExecdInputLimits = Pick<CommandLimits, 'maxCommandBytes'>;

const NOT_AN_OBJECT = 'error parsing request: the body must be a JSON object';
const BODY_REFUSAL = { type: NOT_AN_OBJECT, required: "'{missing}' is required" };

/** A string field, refused by its own name (`'id'`, not `'context.id'`): null or absent is none. */
function optionalText(name: string, description?: string) {
  return Type.Optional(
    orNull(Type.String({ pattern: NO_NUL, ...(description ? { description } : {}), 'x-refusal': { type: `'${name}' must be a string`, pattern: `'${name}' must not contain NUL bytes` } })),
  );
}

/** ms; absent, null or 0: none. */
const TIMEOUT_MS = Type.Optional(
  orNull(Type.Integer({ minimum: 0, description: 'ms; 0 or absent: none', 'x-refusal': { '*': "'timeout' must be a whole number of milliseconds >= 0, got {json}" } })),
);

/** `name -> value`; each name and value checked in order by the `x-execd-envs` check (execdInput.ts). */
const ENVS = Type.Optional(
  orNull(
    Type.Unsafe<Record<string, string>>({
      type: 'object',
      additionalProperties: { type: 'string' },
      'x-execd-envs': true,
      'x-refusal': { type: "'envs' must be an object of name -> string value" },
    }),
  ),
);

const UNSERVED_ID = Type.Optional(
  Type.Unsafe<null>({ description: "not supported: commands run as the sandbox's own user", 'x-unserved': { as: 'unsupported' }, 'x-refusal': { 'x-unserved': "'{field}' is not supported here: commands run as the sandbox's own user" } }),
);

/** POST /command (RunCommandRequest). */
export function runCommandBody(limits?: ExecdInputLimits) {
  return Type.Object(
    {
      command: commandSchema(limits, { notBlank: true }),
      background: Type.Optional(orNull(Type.Boolean({ 'x-refusal': { '*': "'background' must be a boolean" } }))),
      uid: UNSERVED_ID,
      gid: UNSERVED_ID,
      cwd: optionalPath('absolute, or relative to the working directory'),
      envs: ENVS,
      timeout: TIMEOUT_MS,
    },
    { 'x-refusal': BODY_REFUSAL },
  );
}

/** POST /session: an empty body is none. */
export const CREATE_SESSION_BODY = Type.Object({ cwd: optionalPath() }, { 'x-refusal': { type: `${NOT_AN_OBJECT} (or empty)` } });

/** POST /session/{id}/run. */
export function sessionRunBody(limits?: ExecdInputLimits) {
  return Type.Object({ command: commandSchema(limits, { notBlank: true }), cwd: optionalPath(), timeout: TIMEOUT_MS }, { 'x-refusal': BODY_REFUSAL });
}

const LANGUAGE_REFUSAL = 'language {json} is not supported; supported: bash, python (where the sandbox has python3)';

/** POST /code/context. */
export const CREATE_CONTEXT_BODY = Type.Object(
  { language: Type.Unsafe<'bash' | 'python'>({ enum: ['bash', 'python'], 'x-refusal': { '*': LANGUAGE_REFUSAL } }) },
  { 'x-refusal': { type: NOT_AN_OBJECT, required: LANGUAGE_REFUSAL.replace('{json}', 'undefined') } },
);

/** POST /code: `context` may name an id, a language (checked against the languages after the schema), both or neither. */
export function runCodeBody(limits?: ExecdInputLimits) {
  return Type.Object(
    {
      code: commandSchema(limits, { notBlank: true }),
      context: Type.Optional(orNull(Type.Object({ id: optionalText('id'), language: optionalText('language') }, { 'x-refusal': { type: NOT_AN_OBJECT } }))),
    },
    { 'x-refusal': BODY_REFUSAL },
  );
}

/**
 * One entry of a permissions body as the broker takes it: `mode` (default 755) as octal digits, an
 * integer or a string; `owner` and `group` a user or group name or a numeric id. The `x-execd-permissions`
 * check words each entry's refusal before this schema sees it.
 */
export const PERMISSION: Schema = {
  type: 'object',
  properties: {
    mode: { type: ['integer', 'string', 'null'], description: 'octal digits written as an integer (755); default 755' },
    owner: { type: ['string', 'null'] },
    group: { type: ['string', 'null'] },
  },
};

const OBJECT_OF = (what: string) => ({ type: `the body must be a JSON object of ${what}`, minProperties: `the body names no path: a JSON object of ${what} is expected` });

/** POST /files/permissions and POST /directories: path -> {mode, owner, group}, each entry checked by `x-execd-permissions` (execdInput.ts). */
export const PERMISSIONS_BODY = Type.Unsafe<Record<string, unknown>>({
  type: 'object',
  minProperties: 1,
  propertyNames: PATH_KEYS,
  additionalProperties: PERMISSION,
  description: 'path -> {mode, owner?, group?}',
  'x-execd-permissions': true,
  'x-refusal': OBJECT_OF('paths to {mode, owner, group}'),
});

const RENAME_ITEM = `item {top} must be {"src": "...", "dest": "..."}`;
const RENAME_PATH = { '*': RENAME_ITEM, 'x-path': "item {top}: the path {short} {pathFault}" };

/** POST /files/mv. */
export const RENAME_BODY = Type.Array(
  Type.Object({ src: Type.String({ 'x-path': true, 'x-refusal': RENAME_PATH }), dest: Type.String({ 'x-path': true, 'x-refusal': RENAME_PATH }) }, { 'x-refusal': { '*': RENAME_ITEM } }),
  { minItems: 1, 'x-refusal': { '*': 'the body must be a non-empty JSON array of {src, dest}' } },
);

const REPLACE_ITEM = '{top} must map to {"old": "<non-empty>", "new": "..."}';

/** POST /files/replace: `old` must not be empty (the yaml's minLength 1). */
export const REPLACE_BODY = Type.Unsafe<Record<string, { old: string; new: string }>>({
  type: 'object',
  minProperties: 1,
  propertyNames: PATH_KEYS,
  additionalProperties: Type.Object({ old: Type.String({ minLength: 1, 'x-refusal': { '*': REPLACE_ITEM } }), new: Type.String({ 'x-refusal': { '*': REPLACE_ITEM } }) }, { 'x-refusal': { '*': REPLACE_ITEM } }),
  'x-refusal': OBJECT_OF('paths to {old, new}'),
});
