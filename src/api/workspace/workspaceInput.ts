/**
 * The workspace routes' bodies checked against their contract (workspaceContract.ts), and their
 * query strings: checked before a workspace is touched.
 */
import { BadRequestError } from '../../common/errors';
import { checkPathText } from '../../common/pathText';
import type { CommandLimits } from '../../core/session/sessionInput';
import { addDomainCheck, compileCheck } from '../../http/schemaCheck';
import { executeBody, INPUT_BODY, WRITE_BODY } from './workspaceContract';

export const DEFAULT_WAIT_SECONDS = 5;
export const DEFAULT_LOG_LIMIT = 100;
export const MAX_LOG_LIMIT = 1000;
/** read-partial's chunk when the client names no limit. */
export const DEFAULT_PARTIAL_BYTES = 64 * 1024;

/** Compiled once per command size limit (a broker has one). */
const executeChecks = new Map<number, ReturnType<typeof compileCheck<ReturnType<typeof executeBody>>>>();

export function parseWorkspaceExecute(body: unknown, limits: Pick<CommandLimits, 'maxCommandBytes'>): { command: string; waitMs: number } {
  let check = executeChecks.get(limits.maxCommandBytes);
  if (!check) executeChecks.set(limits.maxCommandBytes, (check = compileCheck(executeBody(limits))));
  const { command, wait } = check(body);
  return { command, waitMs: Math.round((wait ?? DEFAULT_WAIT_SECONDS) * 1000) };
}

const inputCheck = compileCheck(INPUT_BODY);

export function parseInput(body: unknown): string {
  return inputCheck(body).text;
}

/** The filename, then the content: a missing one is refused as its type is, in that order. */
addDomainCheck('x-workspace-write', (obj) => {
  for (const field of ['filename', 'content']) if (typeof obj[field] !== 'string') throw new BadRequestError(`'${field}' must be a string`);
});
const writeCheck = compileCheck(WRITE_BODY);

export function parseWrite(body: unknown): { filename: string; content: Buffer } {
  const obj = writeCheck(body);
  const encoding = obj.encoding ?? 'utf-8';
  if (encoding !== 'base64') return { filename: obj.filename, content: Buffer.from(obj.content, 'utf8') };
  const compact = obj.content.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) throw new BadRequestError("'content' is not valid base64");
  return { filename: obj.filename, content: Buffer.from(compact, 'base64') };
}

/** An integer query parameter, or `dflt` when absent. */
export function intParam(params: URLSearchParams, name: string, dflt: number, min: number, max: number): number {
  const raw = params.get(name);
  if (raw === null || raw === '') return dflt;
  if (!/^-?\d+$/.test(raw)) throw new BadRequestError(`'${name}' must be an integer, got '${raw}'`);
  const n = Number(raw);
  if (n < min || n > max) throw new BadRequestError(`'${name}' must be from ${min} to ${max}, got ${n}`);
  return n;
}

/** The `filename` query parameter, a path a file system takes (the workspace's files check it again once resolved). */
export function filenameParam(params: URLSearchParams): string {
  const name = params.get('filename');
  if (name === null || name === '') throw new BadRequestError("query parameter 'filename' is required");
  return checkPathText(name, "'filename'");
}

/** File content as JSON carries it: text when it is valid UTF-8, else base64. */
export function encodeContent(content: Buffer): { content: string; encoding: 'utf-8' | 'base64' } {
  const text = content.toString('utf8');
  return Buffer.byteLength(text) === content.length && !text.includes('\ufffd')
    ? { content: text, encoding: 'utf-8' }
    : { content: content.toString('base64'), encoding: 'base64' };
}
