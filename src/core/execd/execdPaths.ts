/**
 * How execd's file routes read their inputs, whatever the backend: a path resolves against the
 * sandbox's working directory and, for a confined sandbox, must stay inside it (403); a mode is
 * OpenSandbox's octal-as-decimal integer (755 means rwxr-xr-x); a Range is RFC 9110's single range.
 */
import path from 'node:path';
import { BadRequestError, ForbiddenError, RangeNotSatisfiableError } from '../../common/errors';
import { checkPathText } from '../../common/pathText';
import type { SandboxHandle } from '../sandbox/sandboxHandle';

/** A path as the backend takes it: absolute, normalized, and the root it must stay in. */
export interface SandboxPath {
  path: string;
  /** The sandbox's working directory when it is confined, else '/'. */
  root: string;
}

export function sandboxRoot(handle: SandboxHandle): string {
  return handle.confined ? path.posix.resolve(handle.root) : '/';
}

/**
 * `raw` (absolute, or relative to the working directory) made absolute and normalized. `what` names
 * the field in errors. `allowRoot` false: the working directory itself is refused (a delete or a move
 * of it would pull the session's floor away). A path no file system takes (a name or the whole too
 * long, as sent or once made absolute) is a 400 here, not an ENAMETOOLONG from the backend.
 */
export function resolveSandboxPath(handle: SandboxHandle, raw: unknown, what = 'path', allowRoot = true): SandboxPath {
  if (typeof raw !== 'string' || raw === '' || raw.includes('\0')) throw new BadRequestError(`'${what}' must be a non-empty path without NUL bytes`);
  checkPathText(raw, `'${what}'`);
  const root = sandboxRoot(handle);
  const resolved = checkPathText(path.posix.resolve(path.posix.resolve(handle.root), raw), `'${what}' made absolute`);
  const inside = root === '/' || resolved === root || resolved.startsWith(`${root}/`);
  if (!inside) throw new ForbiddenError(`'${raw}' is outside the sandbox's working directory ${root}/`);
  if (!allowRoot && resolved === root) throw new ForbiddenError(`'${raw}' is the sandbox's working directory itself, which stays`);
  return { path: resolved, root };
}

/** OpenSandbox's `mode` (755, 644, 1777: octal digits written as a decimal integer) as permission bits. */
export function parseMode(raw: unknown, what: string): number {
  const digits = typeof raw === 'number' && Number.isInteger(raw) ? String(raw) : typeof raw === 'string' ? raw : null;
  if (digits === null || !/^[0-7]{1,4}$/.test(digits)) {
    throw new BadRequestError(`'${what}' must be a mode of 1 to 4 octal digits written as an integer (755, 644), got ${JSON.stringify(raw)}`);
  }
  return parseInt(digits, 8);
}

/** Permission bits as OpenSandbox writes them: 0o755 becomes 755. */
export function modeAsDecimalDigits(bits: number): number {
  return Number((bits & 0o7777).toString(8));
}

/** The bytes a download sends: the whole file (`partial` false) or one range of it. */
export interface ByteRange {
  offset: number;
  length: number;
  partial: boolean;
}

/**
 * A `Range` header against a file of `size` bytes. One `bytes=` range (`a-b`, `a-`, `-n`); several
 * ranges are answered whole (RFC 9110 lets a server ignore Range). A malformed range or one that
 * starts past the end is a RangeNotSatisfiableError (416).
 */
export function parseRange(header: string | undefined, size: number): ByteRange {
  if (header === undefined || header.trim() === '') return { offset: 0, length: size, partial: false };
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) {
    if (/^\s*bytes\s*=.*,/i.test(header)) return { offset: 0, length: size, partial: false };
    throw new RangeNotSatisfiableError(header, size);
  }
  const [first, last] = [m[1], m[2]];
  let start: number;
  let end: number;
  if (first === '') {
    if (last === '' || Number(last) === 0) throw new RangeNotSatisfiableError(header, size);
    start = Math.max(0, size - Number(last));
    end = size - 1;
  } else {
    start = Number(first);
    end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
    if (last !== '' && Number(last) < start) throw new RangeNotSatisfiableError(header, size);
  }
  if (start >= size) throw new RangeNotSatisfiableError(header, size);
  return { offset: start, length: end - start + 1, partial: true };
}

/** The SDK's `offset`/`limit` query parameters, as the range they mean (a limit past the end is cut). */
export function offsetLimitRange(offsetRaw: string | null, limitRaw: string | null, size: number): ByteRange | null {
  if (offsetRaw === null && limitRaw === null) return null;
  const offset = nonNegative(offsetRaw ?? '0', 'offset');
  const limit = limitRaw === null ? size - offset : nonNegative(limitRaw, 'limit');
  if (offset > size || (offset === size && size > 0)) throw new RangeNotSatisfiableError(`offset=${offset}`, size);
  return { offset, length: Math.max(0, Math.min(limit, size - offset)), partial: true };
}

function nonNegative(raw: string, what: string): number {
  if (!/^\d{1,15}$/.test(raw)) throw new BadRequestError(`'${what}' must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}
