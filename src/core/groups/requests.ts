/**
 * What the sandbox groups' routes ask for, once their bodies are read (api/groups/groupInput.ts), and
 * the checks that need the broker's host: the tool files.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BadRequestError, errorMessage } from '../../common/errors';
import type { DatabaseAccess } from './groupDatabase';
import type { PlacedFile } from '../ports/containers';
import { TOOLS_SUBDIR } from './toolRunner';

export interface GroupStartRequest {
  database: DatabaseAccess | null;
  /** Absolute path of the YAML population file on the broker's host, or null. */
  populationFile: string | null;
}

export interface SandboxStartRequest {
  id: string;
  /** Absolute paths of tool files on the broker's host. */
  tools: string[];
  /** `compute_resources` as sent (computeLimits.ts checks it against the host). */
  compute: unknown;
  attachments: Map<string, DatabaseAccess>;
}

/** Sandbox ids name containers and appear in URLs. */
export const SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
/** Attachment names become environment variable prefixes (`VECTOR_DB_URL`). */
export const ATTACHMENT_NAME = /^[A-Za-z][A-Za-z0-9_]{0,62}$/;
/** A tool's function name: a Python identifier. */
const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_TOOL_BYTES = 4 * 1024 * 1024;

export interface Tools {
  names: string[];
  files: PlacedFile[];
}

/** Reads the tool files: `name.py` provides the function `name`. Every problem is a 400 naming the file. */
export async function readTools(paths: readonly string[]): Promise<Tools> {
  const names: string[] = [];
  const files: PlacedFile[] = [];
  for (const file of paths) {
    if (!path.isAbsolute(file)) throw new BadRequestError(`tool '${file}' must be an absolute path on the broker's host`);
    const base = path.basename(file);
    const name = base.endsWith('.py') ? base.slice(0, -3) : null;
    if (name === null || !TOOL_NAME.test(name)) throw new BadRequestError(`tool '${file}' must be a file name.py, 'name' a Python identifier (it provides the function 'name')`);
    if (name === 'bash') throw new BadRequestError(`tool '${file}': 'bash' is the terminal's function, not a tool's`);
    if (names.includes(name)) throw new BadRequestError(`two tools provide the function '${name}'`);
    let content: Buffer;
    try {
      const stat = await fs.stat(file);
      if (!stat.isFile()) throw new BadRequestError(`tool '${file}' is not a regular file`);
      if (stat.size > MAX_TOOL_BYTES) throw new BadRequestError(`tool '${file}' is larger than ${MAX_TOOL_BYTES} bytes`);
      content = await fs.readFile(file);
    } catch (err) {
      if (err instanceof BadRequestError) throw err;
      throw new BadRequestError(`tool '${file}' cannot be read on the broker's host (${errorMessage(err)})`);
    }
    names.push(name);
    files.push({ name: `${TOOLS_SUBDIR}/${name}.py`, content });
  }
  return { names, files };
}
