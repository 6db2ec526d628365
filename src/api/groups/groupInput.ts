/**
 * The sandbox groups' and the Sandbox API's request bodies, checked before anything is
 * started: a bad one is a 400 that changes nothing. The groups' own routes check theirs against
 * their contract (groupContract.ts); the database accesses in them are the core's check, run where
 * the contract's keywords stand and read once.
 */
import { BadRequestError } from '../../common/errors';
import { parseDatabaseAccess, type DatabaseAccess } from '../../core/groups/groupDatabase';
import { ATTACHMENT_NAME, type GroupStartRequest, type SandboxStartRequest } from '../../core/groups/requests';
import type { Action } from '../../core/groups/groupSandbox';
import { addDomainCheck, compileCheck } from '../../http/schemaCheck';
import { GROUP_START_BODY, SANDBOX_START_BODY, SANDBOX_STOP_BODY } from './groupContract';

function object(body: unknown, what: string, optional = false): Record<string, unknown> {
  if (body === undefined && optional) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError(`${what} must be a JSON object`);
  return body as Record<string, unknown>;
}

function refuseUnknown(obj: Record<string, unknown>, known: readonly string[], what: string): void {
  const unknown = Object.keys(obj).filter((k) => !known.includes(k));
  if (unknown.length > 0) throw new BadRequestError(`${what} has unknown fields: ${unknown.join(', ')} (known: ${known.join(', ')})`);
}

/** What the domain checks read, so the core's parse of each access runs once. */
const groupDatabases = new WeakMap<object, DatabaseAccess | null>();
const attachmentsOf = new WeakMap<object, Map<string, DatabaseAccess>>();

addDomainCheck('x-group-start', (obj) => {
  refuseUnknown(obj, ['database_access', 'initial_database_population_config'], 'the request body');
  // Absent is a group without a database; null is refused like any non-object: the API publishes an object.
  groupDatabases.set(obj, obj.database_access === undefined ? null : parseDatabaseAccess(obj.database_access, 'database_access'));
});
addDomainCheck('x-sandbox-start', (obj) => refuseUnknown(obj, ['id', 'tools', 'compute_resources', 'attached_databases'], 'the request body'));
addDomainCheck('x-attachments', (raw) => {
  const attachments = new Map<string, DatabaseAccess>();
  for (const [name, spec] of Object.entries(raw)) {
    if (!ATTACHMENT_NAME.test(name)) throw new BadRequestError(`'attached_databases' key '${name}' must be a letter then letters, digits or '_' (it names environment variables: ${name.toUpperCase()}_URL)`);
    attachments.set(name, parseDatabaseAccess(spec, `attached_databases.${name}`));
  }
  attachmentsOf.set(raw, attachments);
});
const groupStartCheck = compileCheck(GROUP_START_BODY);
const sandboxStartCheck = compileCheck(SANDBOX_START_BODY);
const sandboxStopCheck = compileCheck(SANDBOX_STOP_BODY);

export function parseGroupStart(body: unknown): GroupStartRequest {
  const obj = groupStartCheck(body === undefined ? {} : body);
  const file = obj.initial_database_population_config;
  return { database: groupDatabases.get(obj) ?? null, populationFile: typeof file === 'string' && file !== '' ? file : null };
}

export function parseSandboxStart(body: unknown): SandboxStartRequest {
  const obj = sandboxStartCheck(body);
  const attachments = obj.attached_databases ? attachmentsOf.get(obj.attached_databases)! : new Map<string, DatabaseAccess>();
  return { id: obj.id, tools: obj.tools ?? [], compute: obj.compute_resources, attachments };
}

export function parseSandboxStop(body: unknown): string {
  return sandboxStopCheck(body).id;
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
