/**
 * Schema parts several APIs' contracts share.
 *
 * A shell command as every API's contract declares it: a string without NUL bytes, at most
 * BROKER_MAX_COMMAND_BYTES (a 413 beyond), refused in the words of the core's own check
 * (core/session/sessionInput.ts checkCommand), which BROKER_POOLS' preparations pass too.
 * Without limits (the document's copy) the size is not part of the schema.
 *
 * A path as every API's contract declares it: `x-path`, the file system's own limits (no NUL, names
 * of at most 255 bytes, at most 4095 bytes in all: common/pathText.ts), so that a path no system call
 * could take is a 400 before anything is touched. Where a path resolves against a directory, the
 * resolver checks what it resolves to as well.
 */
import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';
import type { CommandLimits } from '../core/session/sessionInput';

export const NO_NUL = '^[^\\u0000]*$';

/** `notBlank`: more than white space, refused as "'{field}' must not be empty". */
export function commandSchema(limits?: Pick<CommandLimits, 'maxCommandBytes'>, options: { notBlank?: boolean; description?: string } = {}) {
  return Type.String({
    pattern: NO_NUL,
    ...(options.description ? { description: options.description } : {}),
    ...(limits ? { 'x-max-bytes': limits.maxCommandBytes } : {}),
    ...(options.notBlank ? { 'x-not-blank': true } : {}),
    'x-refusal': {
      type: "'{field}' must be a string, got {a}",
      pattern: "'{field}' must not contain NUL bytes",
      'x-max-bytes': "'{field}' is longer than {limit} bytes (BROKER_MAX_COMMAND_BYTES); send large scripts as files",
      'x-not-blank': "'{field}' must not be empty",
    },
  });
}

/** A field that may also be sent as null, which means absent. */
export function orNull<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] });
}

/** A path field, refused by its own name (`'cwd' must not contain NUL bytes`). */
export function pathSchema(options: { description?: string } = {}) {
  return Type.String({
    'x-path': true,
    ...(options.description ? { description: options.description } : {}),
    'x-refusal': { type: "'{field}' must be a string (a path), got {a}", 'x-path': "'{field}' {pathFault}" },
  });
}

/** A path field that may be absent or null (none). */
export function optionalPath(description?: string) {
  return Type.Optional(orNull(pathSchema({ description })));
}

/** The names of a map keyed by path (`{"notes.txt": ...}`): a `propertyNames` schema. */
export const PATH_KEYS = { type: 'string', 'x-path': true, 'x-refusal': { 'x-path': 'the path {short} {pathFault}' } };

/** A path in a query parameter: its schema for the contract (the route's resolver applies the rule). */
export const PATH_PARAM = { type: 'string', 'x-path': true };
