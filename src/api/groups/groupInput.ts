/**
 * The sandbox groups' and the Sandbox API's request bodies, checked before anything is
 * started: a bad one is a 400 that changes nothing.
 */
import { BadRequestError } from '../../common/errors';
import { parseDatabaseAccess, type DatabaseAccess } from '../../core/groups/groupDatabase';
import { ATTACHMENT_NAME, SANDBOX_ID, type GroupStartRequest, type SandboxStartRequest } from '../../core/groups/requests';
import type { Action } from '../../core/groups/sandbox';

function object(body: unknown, what: string, optional = false): Record<string, unknown> {
  if (body === undefined && optional) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError(`${what} must be a JSON object`);
  return body as Record<string, unknown>;
}

function refuseUnknown(obj: Record<string, unknown>, known: readonly string[], what: string): void {
  const unknown = Object.keys(obj).filter((k) => !known.includes(k));
  if (unknown.length > 0) throw new BadRequestError(`${what} has unknown fields: ${unknown.join(', ')} (known: ${known.join(', ')})`);
}

export function parseGroupStart(body: unknown): GroupStartRequest {
  const obj = object(body, 'the request body', true);
  refuseUnknown(obj, ['database_access', 'initial_database_population_config'], 'the request body');
  const database = obj.database_access === undefined || obj.database_access === null ? null : parseDatabaseAccess(obj.database_access, 'database_access');
  const file = obj.initial_database_population_config;
  if (file !== undefined && file !== null && typeof file !== 'string') throw new BadRequestError("'initial_database_population_config' must be a path (a string)");
  return { database, populationFile: typeof file === 'string' && file !== '' ? file : null };
}

export function parseSandboxStart(body: unknown): SandboxStartRequest {
  const obj = object(body, 'the request body');
  refuseUnknown(obj, ['id', 'tools', 'compute_resources', 'attached_databases'], 'the request body');
  const id = sandboxId(obj.id);
  const tools = obj.tools ?? [];
  if (!Array.isArray(tools) || !tools.every((t) => typeof t === 'string')) throw new BadRequestError("'tools' must be a list of paths on the broker's host");
  const attachments = new Map<string, DatabaseAccess>();
  const raw = obj.attached_databases ?? {};
  for (const [name, spec] of Object.entries(object(raw, "'attached_databases'"))) {
    if (!ATTACHMENT_NAME.test(name)) throw new BadRequestError(`'attached_databases' key '${name}' must be a letter then letters, digits or '_' (it names environment variables: ${name.toUpperCase()}_URL)`);
    attachments.set(name, parseDatabaseAccess(spec, `attached_databases.${name}`));
  }
  return { id, tools: tools as string[], compute: obj.compute_resources, attachments };
}

export function parseSandboxStop(body: unknown): string {
  const obj = object(body, 'the request body');
  return sandboxId(obj.id);
}

function sandboxId(id: unknown): string {
  if (typeof id !== 'string' || !SANDBOX_ID.test(id)) throw new BadRequestError("'id' must be 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit");
  return id;
}

/**
 * `actions` as sandbox groups take it, an object of `function_name: {description, args}` run in its
 * order, or a list of `{function, args}` (which can name a function twice).
 */
export function parseActions(body: unknown): Action[] {
  const obj = object(body, 'the request body');
  const actions = obj.actions;
  if (Array.isArray(actions)) {
    return actions.map((a, i) => {
      const entry = object(a, `actions[${i}]`);
      const name = entry.function ?? entry.name;
      if (typeof name !== 'string' || name === '') throw new BadRequestError(`actions[${i}] needs 'function', the function's name`);
      return { name, args: entry.args ?? {} };
    });
  }
  if (actions === null || typeof actions !== 'object') throw new BadRequestError("'actions' must be an object of function_name: {description, args} (or a list of {function, args})");
  return Object.entries(actions as Record<string, unknown>).map(([name, a]) => ({ name, args: object(a, `actions.${name}`).args ?? {} }));
}

export function parseInputText(body: unknown): string {
  const text = object(body, 'the request body').text;
  if (typeof text !== 'string') throw new BadRequestError("'text' must be a string");
  return text;
}
