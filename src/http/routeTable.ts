/**
 * Matching a request to a declared route: routes are bucketed by method and first path segment, so
 * a request costs one Map lookup and the regexes of a few routes, however many APIs are mounted.
 * A route declared twice (same method, same pattern up to parameter names) stops the start.
 */
import { BadRequestError } from '../common/errors';
import type { ErrorFormat } from './errorFormats';
import type { Router } from './router';

/** The bucket of routes whose first segment is a parameter. */
const ANY_SEGMENT = ':';

interface Compiled<R> {
  route: R;
  router: Router;
  regex: RegExp;
  paramNames: string[];
}

export interface Match<R> {
  route: R;
  router: Router;
  params: Record<string, string>;
}

/**
 * A route matched the path but one of its parameters is no valid percent-encoding: refused (a 400)
 * in the format of the router that declared the route, as its other refusals are, even where another
 * router owns the path's prefix (task sandboxes under /sandboxes, which execd's prefix names).
 */
export class BadParamEncodingError extends Error {
  constructor(
    readonly refusal: BadRequestError,
    readonly router: Router,
  ) {
    super(refusal.message);
  }
}

export class RouteTable<R extends { path: string }> {
  /** key (method, or '' for upgrades) -> first segment -> routes, literal patterns first. */
  private readonly buckets = new Map<string, Map<string, Compiled<R>[]>>();
  /** `key path-shape` -> the router that declared it. */
  private readonly declared = new Map<string, string>();

  add(key: string, route: R, router: Router): void {
    const { regex, paramNames, shape, first } = compile(route.path);
    const id = `${key} ${shape}`.trim();
    const earlier = this.declared.get(id);
    if (earlier !== undefined) {
      throw new Error(`route ${id} is declared twice (routers '${earlier}' and '${router.name}'): remove one`);
    }
    this.declared.set(id, router.name);
    let byFirst = this.buckets.get(key);
    if (!byFirst) this.buckets.set(key, (byFirst = new Map()));
    const bucket = byFirst.get(first) ?? [];
    bucket.push({ route, router, regex, paramNames });
    // A literal segment wins over a parameter in the same place (/session/acquire before /session/:id).
    bucket.sort((a, b) => a.paramNames.length - b.paramNames.length);
    byFirst.set(first, bucket);
  }

  /** `path` without its query string and trailing slash. Throws BadParamEncodingError on a bad percent-encoding. */
  match(key: string, path: string): Match<R> | null {
    const byFirst = this.buckets.get(key);
    if (!byFirst) return null;
    const end = path.indexOf('/', 1);
    const first = end < 0 ? path.slice(1) : path.slice(1, end);
    return find(byFirst.get(first), path) ?? find(byFirst.get(ANY_SEGMENT), path);
  }
}

function find<R>(bucket: Compiled<R>[] | undefined, path: string): Match<R> | null {
  if (!bucket) return null;
  for (const c of bucket) {
    const m = c.regex.exec(path);
    if (!m) continue;
    const params: Record<string, string> = {};
    try {
      for (let i = 0; i < c.paramNames.length; i++) params[c.paramNames[i]] = decodeParam(c.paramNames[i], m[i + 1] ?? '');
    } catch (err) {
      throw new BadParamEncodingError(err as BadRequestError, c.router);
    }
    return { route: c.route, router: c.router, params };
  }
  return null;
}

/** Names the parameter in words in the error: `sessionId` -> "session id '%zz' is not valid ...". */
function decodeParam(name: string, raw: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    const words = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
    throw new BadRequestError(`${words} '${raw}' is not valid percent-encoding`);
  }
}

function compile(pattern: string): { regex: RegExp; paramNames: string[]; shape: string; first: string } {
  if (!pattern.startsWith('/') || (pattern.length > 1 && pattern.endsWith('/'))) {
    throw new Error(`route path '${pattern}' must start with '/' and not end with one`);
  }
  const segments = pattern === '/' ? [''] : pattern.slice(1).split('/');
  const paramNames: string[] = [];
  // A last segment `*name` takes the rest of the path, slashes included, or nothing (a proxy's path).
  const rest = segments.length > 1 && segments[segments.length - 1].startsWith('*') ? segments.pop()!.slice(1) : null;
  if (rest !== null && !/^[A-Za-z_]\w*$/.test(rest)) throw new Error(`route path '${pattern}': bad rest parameter '*${rest}'`);
  const parts = segments.map((segment) => {
    if (segment.startsWith('*')) throw new Error(`route path '${pattern}': '${segment}' must be the last segment`);
    if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const name = segment.slice(1);
    if (!/^[A-Za-z_]\w*$/.test(name) || paramNames.includes(name)) throw new Error(`route path '${pattern}': bad or repeated parameter '${segment}'`);
    paramNames.push(name);
    return '([^/]+)';
  });
  let shape = '/' + segments.map((s) => (s.startsWith(':') ? ':' : s)).join('/');
  const first = segments[0].startsWith(':') ? ANY_SEGMENT : segments[0];
  if (rest === null) return { regex: new RegExp(`^/${parts.join('/')}$`), paramNames, shape, first };
  paramNames.push(rest);
  shape += '/*';
  return { regex: new RegExp(`^/${parts.join('/')}(?:/(.*))?$`), paramNames, shape, first };
}

/**
 * The path part of a request target, without its query string or one trailing slash. An absolute
 * target (`GET http://host/health`, which HTTP/1.1 servers must accept) is reduced to its path.
 */
export function splitTarget(url: string): { path: string; query: string } {
  if (!url.startsWith('/')) url = originForm(url);
  const q = url.indexOf('?');
  let path = q < 0 ? url : url.slice(0, q);
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return { path, query: q < 0 ? '' : url.slice(q + 1) };
}

function originForm(target: string): string {
  try {
    const parsed = new URL(target);
    return parsed.pathname + parsed.search;
  } catch {
    return target; // '*' or garbage: matches no route
  }
}

/** The error format of the router owning `path` by its declared prefix (the longest wins), else `fallback`. */
export function formatForPath(routers: readonly Router[], path: string, fallback: ErrorFormat): ErrorFormat {
  let best: Router | null = null;
  for (const r of routers) {
    const p = r.pathPrefix;
    if (p === undefined || !(path === p || path.startsWith(p.endsWith('/') ? p : `${p}/`))) continue;
    if (!best || p.length > (best.pathPrefix as string).length) best = r;
  }
  return best ? best.errors : fallback;
}
