/**
 * Validation of execd's request bodies and queries (OpenSandbox execd's shapes). Everything is
 * checked before a shell is touched: a rejected request starts nothing.
 */
import path from 'node:path';
import { BadRequestError, NotSupportedError } from '../../common/errors';
import { checkCommand, type CommandLimits } from '../../core/session/sessionInput';
import { NO_TIMEOUT_MS, type CommandRequest } from '../../core/execd/commands';
import { codeLanguage, type CodeLanguage } from '../../core/execd/codeContexts';

export type ExecdInputLimits = Pick<CommandLimits, 'maxCommandBytes'>;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function object(body: unknown, optional = false): Record<string, unknown> {
  if (body === undefined && optional) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new BadRequestError(`error parsing request: the body must be a JSON object${optional ? ' (or empty)' : ''}`);
  }
  return body as Record<string, unknown>;
}

function optionalString(obj: Record<string, unknown>, field: string): string | undefined {
  const v = obj[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new BadRequestError(`'${field}' must be a string`);
  if (v.includes('\0')) throw new BadRequestError(`'${field}' must not contain NUL bytes`);
  return v;
}

/** A working directory: absolute, or relative to the sandbox's own (`root`); empty is the root. */
function directory(obj: Record<string, unknown>, field: string, root: string): string | undefined {
  const v = optionalString(obj, field);
  return v === undefined ? undefined : v === '' ? root : path.posix.resolve(root, v);
}

/** A timeout in ms: absent, null or 0 is none. */
function timeoutMs(obj: Record<string, unknown>): number | null {
  const t = obj.timeout;
  if (t === undefined || t === null || t === 0) return null;
  if (typeof t !== 'number' || !Number.isInteger(t) || t < 0) throw new BadRequestError(`'timeout' must be a whole number of milliseconds >= 0, got ${JSON.stringify(t)}`);
  return Math.min(t, NO_TIMEOUT_MS);
}

function required(obj: Record<string, unknown>, field: string, limits: ExecdInputLimits): string {
  if (!(field in obj)) throw new BadRequestError(`'${field}' is required`);
  const v = checkCommand(obj[field], field, { ...limits, defaultTimeoutSeconds: 0, maxTimeoutSeconds: 0 });
  if (v.trim() === '') throw new BadRequestError(`'${field}' must not be empty`);
  return v;
}

function envs(obj: Record<string, unknown>): Record<string, string> {
  const v = obj.envs;
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new BadRequestError("'envs' must be an object of name -> string value");
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(v as Record<string, unknown>)) {
    if (!ENV_NAME.test(name)) throw new BadRequestError(`envs: ${JSON.stringify(name)} is not a valid variable name`);
    if (typeof value !== 'string') throw new BadRequestError(`envs.${name} must be a string`);
    if (value.includes('\0')) throw new BadRequestError(`envs.${name} must not contain NUL bytes`);
    out[name] = value;
  }
  return out;
}

/** POST /command. */
export function parseRunCommand(body: unknown, root: string, limits: ExecdInputLimits): CommandRequest {
  const obj = object(body);
  const command = required(obj, 'command', limits);
  if (obj.background !== undefined && obj.background !== null && typeof obj.background !== 'boolean') throw new BadRequestError("'background' must be a boolean");
  for (const id of ['uid', 'gid']) {
    if (obj[id] !== undefined && obj[id] !== null) throw new NotSupportedError(`'${id}' is not supported here: commands run as the sandbox's own user`);
  }
  return { command, cwd: directory(obj, 'cwd', root) ?? root, envs: envs(obj), timeoutMs: timeoutMs(obj), background: obj.background === true };
}

/** POST /session: an empty body is allowed. */
export function parseCreateSession(body: unknown, root: string): string {
  return directory(object(body, true), 'cwd', root) ?? root;
}

/** POST /session/{id}/run. */
export function parseSessionRun(body: unknown, root: string, limits: ExecdInputLimits): { command: string; cwd?: string; timeoutMs: number | null } {
  const obj = object(body);
  return { command: required(obj, 'command', limits), cwd: directory(obj, 'cwd', root), timeoutMs: timeoutMs(obj) };
}

/** POST /code/context. */
export function parseCreateContext(body: unknown): CodeLanguage {
  return codeLanguage(object(body).language);
}

/** POST /code: `context` may name an id, a language, both or neither. */
export function parseRunCode(body: unknown, limits: ExecdInputLimits): { code: string; contextId: string | null; language: CodeLanguage | null } {
  const obj = object(body);
  const code = required(obj, 'code', limits);
  const context = obj.context === undefined || obj.context === null ? {} : object(obj.context);
  const id = optionalString(context, 'id');
  const language = optionalString(context, 'language');
  return { code, contextId: id ? id : null, language: language ? codeLanguage(language) : null };
}

/** One query parameter, or null when absent. */
export function queryParam(query: string, name: string): string | null {
  return new URLSearchParams(query).get(name);
}

export function requiredQuery(query: string, name: string): string {
  const v = queryParam(query, name);
  if (v === null || v === '') throw new BadRequestError(`missing query parameter '${name}'`);
  return v;
}

/** `cursor` of /command/{id}/logs: a line count >= 0, or null when absent. */
export function parseCursor(query: string): number | null {
  const v = queryParam(query, 'cursor');
  if (v === null || v === '') return null;
  if (!/^\d{1,15}$/.test(v)) throw new BadRequestError(`'cursor' must be a whole number >= 0, got ${JSON.stringify(v)}`);
  return Number(v);
}
