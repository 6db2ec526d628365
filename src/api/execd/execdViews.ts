/**
 * execd's wire shapes for files (OpenSandbox execd's FileInfo, Permission, RenameFileItem,
 * ReplaceFileContentItem), read and written here so the routes stay a list of calls.
 */
import type { ServerResponse } from 'node:http';
import { BadRequestError } from '../../common/errors';
import type { EntryInfo, Permission } from '../../core/ports/backend';
import { modeAsDecimalDigits, parseMode } from '../../core/execd/execdPaths';

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

/** A query's `depth`: absent or 0 means 1 (immediate children), as the yaml's default. */
export function depthParam(raw: string | null): number {
  if (raw === null || raw === '' || raw === '0') return 1;
  if (!/^\d{1,4}$/.test(raw)) throw new BadRequestError(`'depth' must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}
