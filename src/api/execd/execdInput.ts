/**
 * execd's request bodies checked against their schemas (execdBodies.ts) before a shell is
 * touched: a rejected request starts nothing. What the schemas cannot word runs where its keyword
 * stands: each `envs` entry (`x-execd-envs`) and each permission (`x-execd-permissions`), in the
 * order the entries were sent. A working directory resolves against the sandbox's own once checked.
 * The query parameters are the few small checks at the end.
 */
import path from 'node:path';
import { BadRequestError } from '../../common/errors';
import { checkPathText } from '../../common/pathText';
import type { Permission } from '../../core/ports/backend';
import type { ReplaceItem } from '../../core/execd/execdFiles';
import { NO_TIMEOUT_MS, type CommandRequest } from '../../core/execd/commands';
import { codeLanguage, type CodeLanguage } from '../../core/execd/codeContexts';
import { addDomainCheck, compileCheck } from '../../http/schemaCheck';
import { CREATE_CONTEXT_BODY, CREATE_SESSION_BODY, PERMISSIONS_BODY, RENAME_BODY, REPLACE_BODY, runCodeBody, runCommandBody, sessionRunBody, type ExecdInputLimits } from './execdBodies';
import { permission } from './execdViews';

export type { ExecdInputLimits } from './execdBodies';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

addDomainCheck('x-execd-envs', (envs) => {
  for (const [name, value] of Object.entries(envs)) {
    if (!ENV_NAME.test(name)) throw new BadRequestError(`envs: ${JSON.stringify(name)} is not a valid variable name`);
    if (typeof value !== 'string') throw new BadRequestError(`envs.${name} must be a string`);
    if (value.includes('\0')) throw new BadRequestError(`envs.${name} must not contain NUL bytes`);
  }
});

/** The permissions a body's check read, so each entry is parsed once. */
const checkedPermissions = new WeakMap<object, Map<string, Permission>>();
addDomainCheck('x-execd-permissions', (entries) => {
  const out = new Map<string, Permission>();
  for (const [where, raw] of Object.entries(entries)) out.set(where, permission(raw, where));
  checkedPermissions.set(entries, out);
});

/** Compiled once per command size limit (a broker has one). */
function perLimit<T>(compile: (limits: ExecdInputLimits) => T): (limits: ExecdInputLimits) => T {
  const compiled = new Map<number, T>();
  return (limits) => {
    let check = compiled.get(limits.maxCommandBytes);
    if (!check) compiled.set(limits.maxCommandBytes, (check = compile(limits)));
    return check;
  };
}

const runCommandCheck = perLimit((limits) => compileCheck(runCommandBody(limits)));
const sessionRunCheck = perLimit((limits) => compileCheck(sessionRunBody(limits)));
const runCodeCheck = perLimit((limits) => compileCheck(runCodeBody(limits)));
const createSessionCheck = compileCheck(CREATE_SESSION_BODY);
const createContextCheck = compileCheck(CREATE_CONTEXT_BODY);
const permissionsCheck = compileCheck(PERMISSIONS_BODY);
const renameCheck = compileCheck(RENAME_BODY);
const replaceCheck = compileCheck(REPLACE_BODY);

/**
 * A working directory: absolute, or relative to the sandbox's own (`root`); empty is the root. The
 * schema checked `cwd` as sent; made absolute it must still be a path a file system takes.
 */
function directory(cwd: string | null | undefined, root: string): string | undefined {
  return cwd === undefined || cwd === null ? undefined : cwd === '' ? root : checkPathText(path.posix.resolve(root, cwd), "'cwd' made absolute");
}

/** A timeout in ms: absent, null or 0 is none. */
function timeoutMs(t: number | null | undefined): number | null {
  return t === undefined || t === null || t === 0 ? null : Math.min(t, NO_TIMEOUT_MS);
}

/** POST /command. */
export function parseRunCommand(body: unknown, root: string, limits: ExecdInputLimits): CommandRequest {
  const obj = runCommandCheck(limits)(body);
  return { command: obj.command, cwd: directory(obj.cwd, root) ?? root, envs: obj.envs ?? {}, timeoutMs: timeoutMs(obj.timeout), background: obj.background === true };
}

/** POST /session: an empty body is allowed. */
export function parseCreateSession(body: unknown, root: string): string {
  return directory(createSessionCheck(body === undefined ? {} : body).cwd, root) ?? root;
}

/** POST /session/{id}/run. */
export function parseSessionRun(body: unknown, root: string, limits: ExecdInputLimits): { command: string; cwd?: string; timeoutMs: number | null } {
  const obj = sessionRunCheck(limits)(body);
  return { command: obj.command, cwd: directory(obj.cwd, root), timeoutMs: timeoutMs(obj.timeout) };
}

/** POST /code/context. */
export function parseCreateContext(body: unknown): CodeLanguage {
  return createContextCheck(body).language;
}

/** POST /code: `context` may name an id, a language, both or neither. */
export function parseRunCode(body: unknown, limits: ExecdInputLimits): { code: string; contextId: string | null; language: CodeLanguage | null } {
  const obj = runCodeCheck(limits)(body);
  const { id, language } = obj.context ?? {};
  return { code: obj.code, contextId: id ? id : null, language: language ? codeLanguage(language) : null };
}

/** `{"/path": {mode, owner, group}, ...}` (permissions, directories). */
export function parsePermissions(body: unknown): Map<string, Permission> {
  return checkedPermissions.get(permissionsCheck(body) as object)!;
}

/** `[{"src": ..., "dest": ...}, ...]`. */
export function parseRenames(body: unknown): { src: string; dest: string }[] {
  return renameCheck(body).map(({ src, dest }) => ({ src, dest }));
}

/** `{"/path": {"old": ..., "new": ...}, ...}`. */
export function parseReplacements(body: unknown): Map<string, ReplaceItem> {
  return new Map(Object.entries(replaceCheck(body)).map(([where, { old, new: replacement }]) => [where, { old, new: replacement }]));
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
