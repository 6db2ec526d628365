/**
 * Image references in Docker's grammar (registry/repository:tag or @digest), checked and written in
 * one canonical form: a name without a registry is Docker Hub's (`ubuntu` is
 * `docker.io/library/ubuntu:latest`), so two spellings of one image are one image, one pull, one
 * pool, and the allow-list matches what the engine will really fetch. The pattern is also the
 * contract's (poolContract.ts): a reference outside it is a 400 before anything starts.
 */
import { BadRequestError } from '../../common/errors';

/** A reference longer than this is refused (Docker's name limit is 255; a tag adds 129, a digest 72). */
export const MAX_IMAGE_REF_CHARS = 512;

const ALNUM = '[a-z0-9]+';
const SEPARATOR = '(?:[._]|__|-+)';
const PATH_COMPONENT = `${ALNUM}(?:${SEPARATOR}${ALNUM})*`;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*(?::[0-9]{1,5})?`;
const TAG = '[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}';
const DIGEST = 'sha256:[a-f0-9]{64}';

/**
 * The whole grammar as one anchored pattern (JSON Schema's `pattern`). Its character classes do not
 * overlap where they repeat, so a hostile string of 512 characters is refused in linear-ish time.
 */
export const IMAGE_REF_PATTERN = `^(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*(?::${TAG})?(?:@${DIGEST})?$`;
const WHOLE = new RegExp(IMAGE_REF_PATTERN);

const DOCKER_HUB = 'docker.io';

export interface ImageRef {
  /** registry host (and port): `docker.io`, `registry.local:5000`. */
  registry: string;
  /** The path under the registry: `library/ubuntu`, `swe/task-17`. */
  path: string;
  tag: string | null;
  digest: string | null;
  /** `registry/path`: what the allow-list matches. */
  repository: string;
  /** `registry/path:tag` or `registry/path@digest` (`:latest` when neither was given). */
  canonical: string;
}

/** Docker's rule: the first part names a registry when it has a `.` or a `:`, is `localhost`, or has an upper-case letter. */
function isRegistry(part: string): boolean {
  return part.includes('.') || part.includes(':') || part === 'localhost' || part !== part.toLowerCase();
}

/** Parses `raw`, or throws a 400 that says what is wrong with it (`field`: what the request called it). */
export function parseImageRef(raw: string, field = 'image'): ImageRef {
  if (raw.length > MAX_IMAGE_REF_CHARS) throw new BadRequestError(`'${field}' must be at most ${MAX_IMAGE_REF_CHARS} characters, got ${raw.length}`);
  if (!WHOLE.test(raw)) throw new BadRequestError(`'${field}' must be an image reference such as registry.local:5000/repo/name:tag or name@sha256:<64 hex>, got ${JSON.stringify(raw.slice(0, 80))}`);
  let rest = raw;
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag: string | null = null;
  const lastColon = rest.lastIndexOf(':');
  if (lastColon > rest.lastIndexOf('/')) {
    tag = rest.slice(lastColon + 1);
    rest = rest.slice(0, lastColon);
  }
  const slash = rest.indexOf('/');
  let registry = DOCKER_HUB;
  let path = rest;
  if (slash >= 0 && isRegistry(rest.slice(0, slash))) {
    registry = rest.slice(0, slash);
    path = rest.slice(slash + 1);
  }
  if (registry === 'index.docker.io') registry = DOCKER_HUB;
  if (registry === DOCKER_HUB && !path.includes('/')) path = `library/${path}`;
  const repository = `${registry}/${path}`;
  if (repository.length > 255) throw new BadRequestError(`'${field}' must name a repository of at most 255 characters, got ${repository.length}`);
  if (digest === null && tag === null) tag = 'latest';
  const canonical = digest !== null ? `${repository}@${digest}` : `${repository}:${tag}`;
  return { registry, path, tag, digest, repository, canonical };
}

/** The canonical form of `raw`, or null when it is no reference (an engine's `<none>:<none>`). */
export function canonicalImage(raw: string): string | null {
  try {
    return parseImageRef(raw).canonical;
  } catch {
    return null;
  }
}
