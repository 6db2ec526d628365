/**
 * What a client gives a session, checked the same way wherever it comes from (an acquire's body, a
 * pool's preparation in BROKER_POOLS, a workspace's or execd's command): a command, the files written
 * into its working directory, its startup commands.
 */
import path from 'node:path';
import { BadRequestError, PayloadTooLargeError } from '../../common/errors';
import { describe } from '../../common/inWords';
import { checkPathText } from '../../common/pathText';
import { sessionWorkdir, type WorkdirFile } from '../ports/backend';

export interface CommandLimits {
  defaultTimeoutSeconds: number;
  maxTimeoutSeconds: number;
  maxCommandBytes: number;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}|[A-Za-z0-9+/]{3})?$/;

export function checkCommand(command: unknown, field: string, limits: CommandLimits): string {
  if (typeof command !== 'string') throw new BadRequestError(`'${field}' must be a string, got ${describe(command)}`);
  if (command.includes('\0')) throw new BadRequestError(`'${field}' must not contain NUL bytes`);
  if (Buffer.byteLength(command) > limits.maxCommandBytes) {
    throw new PayloadTooLargeError(
      `'${field}' is longer than ${limits.maxCommandBytes} bytes (BROKER_MAX_COMMAND_BYTES); send large scripts as files`,
    );
  }
  return command;
}

export function parseStartupCommands(value: unknown, limits: CommandLimits): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new BadRequestError(`'startup_commands' must be a list of strings, got ${describe(value)}`);
  return value.map((c, i) => checkCommand(c, `startup_commands[${i}]`, limits));
}

export function parseWorkdirFiles(value: unknown): WorkdirFile[] {
  if (value === undefined || value === null) return [];
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new BadRequestError(`'files' must be an object of relative path -> base64 content, got ${describe(value)}`);
  }
  const files: WorkdirFile[] = [];
  for (const [key, content] of Object.entries(value as Record<string, unknown>)) {
    const rel = checkRelativePath(key);
    if (typeof content !== 'string') throw new BadRequestError(`files['${key}'] must be a base64 string, got ${describe(content)}`);
    const compact = content.replace(/\s+/g, '');
    if (!BASE64.test(compact)) throw new BadRequestError(`files['${key}'] is not valid base64`);
    files.push({ path: rel, content: Buffer.from(compact, 'base64') });
  }
  checkNoConflicts(files);
  return files;
}

/** What a file's whole path starts with: a lease's directory, its id 32 hex digits with room for a cluster node's prefix. */
const A_WORKDIR = sessionWorkdir('0'.repeat(96));

/** A path relative to the working directory that stays inside it, and that a file system takes there. */
export function checkRelativePath(key: string): string {
  if (key.length === 0) throw new BadRequestError('file paths must not be empty');
  if (key.includes('\0')) throw new BadRequestError(`file path '${key}' contains a NUL byte`);
  checkPathText(key, 'a file path');
  if (key.startsWith('/') || key.startsWith('\\')) throw new BadRequestError(`file path '${key}' must be relative, not absolute`);
  const segments = key.split('/');
  if (segments.includes('..')) throw new BadRequestError(`file path '${key}' must not contain '..'`);
  const normal = path.posix.normalize(key);
  if (normal === '.' || normal.endsWith('/') || normal === '') throw new BadRequestError(`file path '${key}' does not name a file`);
  checkPathText(A_WORKDIR + normal, 'a file path in the working directory');
  return normal;
}

/** "a" and "a/b" cannot both be files; catch it here rather than half-write the directory. */
function checkNoConflicts(files: WorkdirFile[]): void {
  const names = new Set<string>();
  for (const f of files) {
    if (names.has(f.path)) throw new BadRequestError(`file path '${f.path}' is given twice`);
    names.add(f.path);
  }
  for (const f of files) {
    const parts = f.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      if (names.has(parent)) throw new BadRequestError(`file path '${parent}' is both a file and the directory of '${f.path}'`);
    }
  }
}
