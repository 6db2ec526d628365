/**
 * The one rule every route that takes a path applies to it, before the path reaches a file system:
 * no NUL byte (no system call takes one), no name past NAME_MAX and no whole path past PATH_MAX, as
 * Linux counts them (bytes, the PATH_MAX byte of the terminating NUL left out). Past either limit
 * the kernel answers ENAMETOOLONG, which would otherwise surface as a broker fault (a 500) after
 * the request had begun to change things: a session half opened, a directory half made.
 *
 * A contract declares a path with `x-path` (contractParts.ts), which the input checks apply
 * (schemaCheck.ts); a path that reaches the core another way (a query parameter, a multipart part)
 * is checked by the resolver that makes it absolute, on what it was sent and on what it resolves to.
 */
import { BadRequestError } from './errors';

/** Linux's NAME_MAX: bytes in one name (one segment between slashes). */
export const NAME_MAX_BYTES = 255;
/** Linux's PATH_MAX (4096) without the terminating NUL: bytes in a whole path. */
export const PATH_MAX_BYTES = 4095;

/** A long text in a message: its start, quoted, and how long it is. */
function excerpt(text: string, bytes: number): string {
  return `${JSON.stringify(text.length > 24 ? `${text.slice(0, 24)}...` : text)} (${bytes} bytes)`;
}

/** Why `text` cannot be a path (words to follow the path's name), or null when it can. */
export function pathTextFault(text: string): string | null {
  if (text.includes('\0')) return 'must not contain NUL bytes';
  const bytes = Buffer.byteLength(text);
  if (bytes > PATH_MAX_BYTES) return `is ${bytes} bytes, longer than a path may be (${PATH_MAX_BYTES} bytes)`;
  for (const name of text.split('/')) {
    const nameBytes = Buffer.byteLength(name);
    if (nameBytes > NAME_MAX_BYTES) return `has a name ${excerpt(name, nameBytes)} longer than a name may be (${NAME_MAX_BYTES} bytes)`;
  }
  return null;
}

/** `text` when it can be a path; else a 400 naming `what` (a field, `'cwd'`, or a path's own words). */
export function checkPathText(text: string, what: string): string {
  const fault = pathTextFault(text);
  if (fault !== null) throw new BadRequestError(`${what} ${fault}`);
  return text;
}
