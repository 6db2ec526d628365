/** Validation of the workspace routes' bodies and query strings: checked before a workspace is touched. */
import { BadRequestError } from '../../common/errors';
import { checkCommand, type CommandLimits } from '../../core/session/sessionInput';

export const DEFAULT_WAIT_SECONDS = 5;
export const MAX_WAIT_SECONDS = 30;
export const DEFAULT_LOG_LIMIT = 100;
export const MAX_LOG_LIMIT = 1000;
/** read-partial's chunk when the client names no limit. */
export const DEFAULT_PARTIAL_BYTES = 64 * 1024;

function object(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('Request body must be a JSON object');
  return body as Record<string, unknown>;
}

export function parseWorkspaceExecute(body: unknown, limits: Pick<CommandLimits, 'maxCommandBytes'>): { command: string; waitMs: number } {
  const obj = object(body);
  if (!('command' in obj)) throw new BadRequestError("'command' is required");
  const command = checkCommand(obj.command, 'command', { ...limits, defaultTimeoutSeconds: 0, maxTimeoutSeconds: 0 });
  let wait = DEFAULT_WAIT_SECONDS;
  if (obj.wait !== undefined && obj.wait !== null) {
    if (typeof obj.wait !== 'number' || !Number.isFinite(obj.wait) || obj.wait < 0 || obj.wait > MAX_WAIT_SECONDS) {
      throw new BadRequestError(`'wait' must be a number of seconds from 0 to ${MAX_WAIT_SECONDS}, got ${JSON.stringify(obj.wait)}`);
    }
    wait = obj.wait;
  }
  return { command, waitMs: Math.round(wait * 1000) };
}

export function parseInput(body: unknown): string {
  const obj = object(body);
  if (typeof obj.text !== 'string') throw new BadRequestError("'text' must be a string");
  return obj.text;
}

export function parseWrite(body: unknown): { filename: string; content: Buffer } {
  const obj = object(body);
  if (typeof obj.filename !== 'string') throw new BadRequestError("'filename' must be a string");
  if (typeof obj.content !== 'string') throw new BadRequestError("'content' must be a string");
  const encoding = obj.encoding ?? 'utf-8';
  if (encoding === 'utf-8' || encoding === 'utf8') return { filename: obj.filename, content: Buffer.from(obj.content, 'utf8') };
  if (encoding !== 'base64') throw new BadRequestError(`'encoding' must be 'utf-8' or 'base64', got ${JSON.stringify(encoding)}`);
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

export function filenameParam(params: URLSearchParams): string {
  const name = params.get('filename');
  if (name === null || name === '') throw new BadRequestError("query parameter 'filename' is required");
  return name;
}

/** File content as JSON carries it: text when it is valid UTF-8, else base64. */
export function encodeContent(content: Buffer): { content: string; encoding: 'utf-8' | 'base64' } {
  const text = content.toString('utf8');
  return Buffer.byteLength(text) === content.length && !text.includes('\ufffd')
    ? { content: text, encoding: 'utf-8' }
    : { content: content.toString('base64'), encoding: 'base64' };
}
