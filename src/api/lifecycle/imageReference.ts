/**
 * A create's `image.uri` as Docker's grammar has it (`[registry[:port]/]path[:tag][@digest]`), checked
 * before the engine is asked about it. The engine's client puts the name into a URL path as it is:
 * a name with `..` segments, a leading `/` or a `?` names another endpoint, and the engine's redirect
 * for a path with `..` sent the client to a host named after a segment (`http://json/`), an error
 * thrown outside any request, which ended the broker's process.
 */
import { BadRequestError } from '../../common/errors';

/** Docker's limits: a repository name of at most 255 characters; a tag adds up to 129, a digest 72 and more. */
const MAX_REFERENCE_CHARS = 512;
const MAX_NAME_CHARS = 255;

const DOMAIN_PART = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `${DOMAIN_PART}(?:\\.${DOMAIN_PART})*(?::[0-9]+)?`;
const PATH_PART = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const NAME = `(?:${DOMAIN}/)?${PATH_PART}(?:/${PATH_PART})*`;
const REFERENCE = new RegExp(`^(${NAME})(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`);

/** `uri` when it is an image reference; else a 400 that quotes its start. */
export function checkImageReference(uri: string): string {
  const m = uri.length <= MAX_REFERENCE_CHARS ? REFERENCE.exec(uri) : null;
  if (!m || m[1].length > MAX_NAME_CHARS) {
    const shown = JSON.stringify(uri.length > 40 ? `${uri.slice(0, 40)}...` : uri);
    throw new BadRequestError(`image.uri must be an image reference such as registry:5000/name:tag or name@sha256:<hex> (at most ${MAX_NAME_CHARS} characters of name), got ${shown}`);
  }
  return uri;
}
