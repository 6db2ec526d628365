/**
 * execd's wire shapes for files (OpenSandbox execd's FileInfo, Permission, RenameFileItem,
 * ReplaceFileContentItem), read and written here so the routes stay a list of calls.
 */
import type { ServerResponse } from 'node:http';
import { BadRequestError } from '../../common/errors';
import type { EntryInfo, Permission } from '../../core/ports/backend';
import { modeAsDecimalDigits, parseMode } from '../../core/execd/execdPaths';
import type { ReplaceItem } from '../../core/execd/execdFiles';

/** The mode a Permission without one gets: the yaml's default. */
const DEFAULT_MODE = 755;

export function fileInfo(entry: EntryInfo): Record<string, unknown> {
  return {
    path: entry.path,
    type: entry.type,
    size: entry.size,
    modified_at: new Date(entry.modifiedMs).toISOString(),
    created_at: new Date(entry.createdMs).toISOString(),
    owner: entry.owner,
    group: entry.group,
    mode: modeAsDecimalDigits(entry.mode),
  };
}

/** A 200 with no body: `Content-Length: 0` tells OpenSandbox's SDK (openapi-fetch) there is no JSON to parse. */
export function sendEmpty(res: ServerResponse): void {
  res.writeHead(200, { 'Content-Length': '0' });
  res.end();
}

function objectBody(body: unknown, what: string): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BadRequestError(`the body must be a JSON object of ${what}`);
  if (Object.keys(body).length === 0) throw new BadRequestError(`the body names no path: a JSON object of ${what} is expected`);
  return body as Record<string, unknown>;
}

export function optionalName(value: unknown, what: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || !/^[A-Za-z0-9._][A-Za-z0-9._-]{0,63}$/.test(value)) {
    throw new BadRequestError(`'${what}' must be a user or group name (or a numeric id), got ${JSON.stringify(value)}`);
  }
  return value;
}

export function permission(raw: unknown, where: string): Permission {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new BadRequestError(`${where} must be an object {mode, owner, group}`);
  const p = raw as Record<string, unknown>;
  return {
    mode: parseMode(p.mode ?? DEFAULT_MODE, `${where}.mode`),
    owner: optionalName(p.owner, `${where}.owner`),
    group: optionalName(p.group, `${where}.group`),
  };
}

/** `{"/path": {mode, owner, group}, ...}` (permissions, directories). */
export function permissionMap(body: unknown): Map<string, Permission> {
  const out = new Map<string, Permission>();
  for (const [path, raw] of Object.entries(objectBody(body, 'paths to {mode, owner, group}'))) out.set(path, permission(raw, path));
  return out;
}

/** `[{"src": ..., "dest": ...}, ...]`. */
export function renameItems(body: unknown): { src: string; dest: string }[] {
  if (!Array.isArray(body) || body.length === 0) throw new BadRequestError('the body must be a non-empty JSON array of {src, dest}');
  return body.map((item: unknown, i) => {
    const it = item as Record<string, unknown> | null;
    if (typeof it !== 'object' || it === null || typeof it.src !== 'string' || typeof it.dest !== 'string') {
      throw new BadRequestError(`item ${i} must be {"src": "...", "dest": "..."}`);
    }
    return { src: it.src, dest: it.dest };
  });
}

/** `{"/path": {"old": ..., "new": ...}, ...}`; `old` must not be empty (the yaml's minLength 1). */
export function replaceItems(body: unknown): Map<string, ReplaceItem> {
  const out = new Map<string, ReplaceItem>();
  for (const [path, raw] of Object.entries(objectBody(body, 'paths to {old, new}'))) {
    const it = raw as Record<string, unknown> | null;
    if (typeof it !== 'object' || it === null || typeof it.old !== 'string' || typeof it.new !== 'string' || it.old === '') {
      throw new BadRequestError(`${path} must map to {"old": "<non-empty>", "new": "..."}`);
    }
    out.set(path, { old: it.old, new: it.new });
  }
  return out;
}

/** A query's `depth`: absent or 0 means 1 (immediate children), as the yaml's default. */
export function depthParam(raw: string | null): number {
  if (raw === null || raw === '' || raw === '0') return 1;
  if (!/^\d{1,4}$/.test(raw)) throw new BadRequestError(`'depth' must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}
