/**
 * A file system's refusal that reached the final error handler untranslated, as the answer it means.
 *
 * Each route checks its paths (pathText.ts) and each backend translates its own file errors, so an
 * errno that gets this far is a check missed. It still says what the client did wrong (a path too
 * long, a file that is not there, a file where a directory must be), which is a 4xx, never the 500
 * of a fault the broker cannot explain. Without the path itself: on the local backend it is the
 * host's. The handler logs each one, so the missed check is found and written where it belongs.
 */
import { BadRequestError, BrokerError, ForbiddenError, NotAFileError } from './errors';
import { NAME_MAX_BYTES, PATH_MAX_BYTES } from './pathText';

/** errno codes of a path that cannot be used, and what each becomes. */
const REFUSAL_OF_CODE: Readonly<Record<string, () => BrokerError>> = {
  ENAMETOOLONG: () => new BadRequestError(`a path is too long for the file system (a name over ${NAME_MAX_BYTES} bytes, or over ${PATH_MAX_BYTES} bytes in all)`),
  ENOENT: () => new BrokerError('not_found', 'file_not_found', 'No such file or directory'),
  ENOTDIR: () => new BadRequestError('a part of the path is a file, not a directory'),
  EISDIR: () => new NotAFileError('the path (a directory)'),
  ELOOP: () => new BadRequestError('the path goes through too many symbolic links'),
  EACCES: () => new ForbiddenError('permission denied on the path'),
  // Node's own refusal of a path with a NUL byte, before any system call.
  ERR_INVALID_ARG_VALUE: () => new BadRequestError('a path must not contain NUL bytes'),
};

/** The answer a foreign error with one of these codes means, or null (it stays a 500). */
export function fileSystemRefusal(err: unknown): BrokerError | null {
  if (err instanceof BrokerError || err === null || typeof err !== 'object') return null;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !Object.hasOwn(REFUSAL_OF_CODE, code)) return null;
  if (code === 'ERR_INVALID_ARG_VALUE' && !/null bytes/.test(String((err as { message?: unknown }).message))) return null;
  return REFUSAL_OF_CODE[code]();
}
