/**
 * The lifecycle API's requests checked against their contract (lifecycleContract.ts): a
 * CreateSandboxRequest, RenewSandboxExpirationRequest, a metadata merge patch; and the list query.
 * Everything is checked before anything is started, so a rejected request creates nothing. What the
 * broker does not serve (snapshots, egress policy, volumes) is refused with 501, never ignored.
 * A create's rules depend on each other (an image or a poolRef, an entrypoint with an image) and
 * are refused in a fixed order, so they run here once its schema passed.
 */
import os from 'node:os';
import { BadRequestError, NotImplementedError } from '../../common/errors';
import type { SandboxSpec } from '../../core/lifecycle/sandboxRecord';
import type { SandboxFilter } from '../../core/lifecycle/sandboxService';
import { addDomainCheck, compileCheck } from '../../http/schemaCheck';
import { parseCpus, parseMemoryBytes } from './quantities';
import { CREATE_BODY, CREATE_FIELDS, LABEL_VALUE, METADATA_PATCH_BODY, RENEW_BODY } from './lifecycleContract';

export interface CreateInput extends SandboxSpec {
  /** `extensions.poolRef`: the named pool to serve it from (OpenSandbox's pool mode). */
  poolRef: string | null;
}

export interface TimeoutBounds {
  minSeconds: number;
  maxSeconds: number;
}

const KNOWN_FIELDS = new Set(CREATE_FIELDS);
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HOST_ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };

function object(value: unknown, where: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new BadRequestError(`${where} must be a JSON object`);
  return value as Record<string, unknown>;
}

function strings(value: unknown, where: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  const obj = object(value, where);
  for (const [k, v] of Object.entries(obj)) {
    if (typeof v !== 'string' || v.includes('\0')) throw new BadRequestError(`${where}.${k} must be a string without NUL bytes`);
  }
  return obj as Record<string, string>;
}

function present(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

const createCheck = compileCheck(CREATE_BODY);

export function parseCreate(body: unknown, bounds: TimeoutBounds): CreateInput {
  const req: Record<string, unknown> = createCheck(body);
  const unknown = Object.keys(req).filter((k) => !KNOWN_FIELDS.has(k));
  if (unknown.length > 0) throw new BadRequestError(`unknown field(s) ${unknown.join(', ')}; CreateSandboxRequest has ${CREATE_FIELDS.join(', ')}`);
  if (present(req.snapshotId)) throw new NotImplementedError('snapshotId: restoring from snapshots is not served by this broker (create from an image)');
  if (present(req.networkPolicy)) throw new NotImplementedError('networkPolicy: egress network policy is not served by this broker (sandboxes get the network of their pool or BROKER_NETWORK_MODE)');
  if (present(req.credentialProxy)) throw new NotImplementedError('credentialProxy: the credential vault proxy is not served by this broker');
  if (present(req.volumes)) throw new NotImplementedError('volumes: storage mounts are not served by this broker');
  if (req.secureAccess === true) throw new NotImplementedError('secureAccess: signed endpoint access is not served; endpoints take the broker token (OPEN-SANDBOX-API-KEY)');
  if (req.secureAccess !== undefined && typeof req.secureAccess !== 'boolean') throw new BadRequestError('secureAccess must be a boolean');
  const extensions = strings(req.extensions, 'extensions');
  if (extensions['access.renew.extend.seconds'] !== undefined) throw new NotImplementedError('extensions.access.renew.extend.seconds: renew-on-access is not served (renew with renew-expiration)');
  const poolRef = extensions.poolRef ?? null;
  const image = parseImage(req.image, poolRef !== null);
  const imageAuth = parseImageAuth(req.image);
  checkPlatform(req.platform);
  const limits = strings(req.resourceLimits, 'resourceLimits');
  strings(req.resourceRequests, 'resourceRequests'); // Kubernetes' requests: checked, meaningless here
  const unservedLimits = Object.keys(limits).filter((k) => k !== 'cpu' && k !== 'memory');
  if (unservedLimits.length > 0) throw new BadRequestError(`resourceLimits: ${unservedLimits.join(', ')} not served (cpu and memory are)`);
  const env = strings(req.env, 'env');
  for (const k of Object.keys(env)) if (!ENV_NAME.test(k)) throw new BadRequestError(`env: '${k}' is not a valid variable name`);
  return {
    image: image ?? '',
    poolRef,
    entrypoint: parseEntrypoint(req.entrypoint, image !== null && poolRef === null),
    env,
    metadata: metadataOf(req.metadata),
    timeoutMs: parseTimeout(req.timeout, bounds),
    cpus: limits.cpu === undefined ? null : parseCpus(limits.cpu, os.cpus().length),
    memoryBytes: limits.memory === undefined ? null : parseMemoryBytes(limits.memory),
    imageAuth,
  };
}

/** `image.auth`: checked here for its shape; whether it names the node's own credentials is the service's (docs/images.md). */
function parseImageAuth(value: unknown): { username?: string; password?: string } | null {
  if (value === undefined || value === null) return null;
  const auth = (value as Record<string, unknown>).auth;
  if (auth === undefined || auth === null) return null;
  const fields = object(auth, 'image.auth');
  const extra = Object.keys(fields).filter((k) => k !== 'username' && k !== 'password');
  if (extra.length > 0) throw new BadRequestError(`image.auth: unknown field(s) ${extra.join(', ')}; it has username and password`);
  for (const k of ['username', 'password'] as const) {
    if (fields[k] !== undefined && (typeof fields[k] !== 'string' || (fields[k] as string).length > 4096)) throw new BadRequestError(`image.auth.${k} must be a string`);
  }
  return fields as { username?: string; password?: string };
}

function parseImage(value: unknown, optional: boolean): string | null {
  if (value === undefined || value === null) {
    if (optional) return null;
    throw new BadRequestError('image is required: {"uri": "<image>"} (or extensions.poolRef naming a pool)');
  }
  const image = object(value, 'image');
  const extra = Object.keys(image).filter((k) => k !== 'uri' && k !== 'auth');
  if (extra.length > 0) throw new BadRequestError(`image: unknown field(s) ${extra.join(', ')}`);
  if (typeof image.uri !== 'string' || image.uri.trim() === '') throw new BadRequestError('image.uri must be a non-empty string');
  return image.uri.trim();
}

function parseEntrypoint(value: unknown, required: boolean): string[] {
  if (value === undefined || value === null) {
    if (required) throw new BadRequestError('entrypoint is required with image: e.g. ["tail", "-f", "/dev/null"]');
    return ['tail', '-f', '/dev/null'];
  }
  if (!Array.isArray(value) || value.length === 0 || value.some((a) => typeof a !== 'string' || a.includes('\0'))) {
    throw new BadRequestError('entrypoint must be a non-empty list of strings');
  }
  return value as string[];
}

function parseTimeout(value: unknown, { minSeconds, maxSeconds }: TimeoutBounds): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minSeconds || value > maxSeconds) {
    throw new BadRequestError(`timeout must be an integer number of seconds between ${minSeconds} and ${maxSeconds} (BROKER_SANDBOX_MAX_TIMEOUT), or null for none; got ${JSON.stringify(value)}`);
  }
  return value * 1000;
}

function checkPlatform(value: unknown): void {
  if (value === undefined || value === null) return;
  const p = object(value, 'platform');
  const arch = HOST_ARCH[os.arch()] ?? os.arch();
  if (p.os !== 'linux' || p.arch !== arch) {
    throw new BadRequestError(`platform ${JSON.stringify(p)} cannot be satisfied: this broker runs linux/${arch}`);
  }
}

/** Other fields first, all named; then a missing expiresAt, in the words of its schema's refusal. */
addDomainCheck('x-renew-fields', (req) => {
  const extra = Object.keys(req).filter((k) => k !== 'expiresAt');
  if (extra.length > 0) throw new BadRequestError(`unknown field(s) ${extra.join(', ')}; the body is {"expiresAt": "<RFC 3339 time>"}`);
  if (!('expiresAt' in req)) throw new BadRequestError('expiresAt must be an RFC 3339 time such as 2025-11-16T14:30:45Z, got undefined');
});
const renewCheck = compileCheck(RENEW_BODY);

export function parseRenew(body: unknown): Date {
  return new Date(renewCheck(body).expiresAt);
}

export const MAX_PAGE_SIZE = 1000;

/** `?state=Running&state=Paused&metadata=k%3Dv%26k2%3Dv2&page=1&pageSize=20`. */
export function parseListQuery(query: string, knownStates: readonly string[]): SandboxFilter {
  const params = new URLSearchParams(query);
  const states = params.getAll('state');
  const bad = states.filter((s) => !knownStates.includes(s));
  if (bad.length > 0) throw new BadRequestError(`state ${bad.join(', ')} is not a sandbox state (${knownStates.join(', ')})`);
  const metadata: Record<string, string> = {};
  for (const raw of params.getAll('metadata')) {
    for (const [k, v] of new URLSearchParams(raw)) {
      if (k === '') throw new BadRequestError(`metadata filter '${raw}' has an empty key; the form is key=value&key2=value2`);
      metadata[k] = v;
    }
  }
  return { states, metadata, page: positive(params.get('page'), 1, 'page', Number.MAX_SAFE_INTEGER), pageSize: positive(params.get('pageSize'), 20, 'pageSize', MAX_PAGE_SIZE) };
}

function positive(raw: string | null, dflt: number, name: string, max: number): number {
  if (raw === null) return dflt;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > max) throw new BadRequestError(`${name} must be an integer between 1 and ${max}, got '${raw}'`);
  return n;
}

const LABEL = new RegExp(LABEL_VALUE);

/** An empty metadata key is refused: no list filter could name it (`metadata=k%3Dv` needs a key). */
function checkMetadataKey(key: string): void {
  if (key === '') throw new BadRequestError("metadata key '': a key must not be empty");
}

/** A create's metadata: strings by non-empty keys. */
function metadataOf(value: unknown): Record<string, string> {
  const metadata = strings(value, 'metadata');
  Object.keys(metadata).forEach(checkMetadataKey);
  return metadata;
}

/** Entry by entry: its key, then its value. */
addDomainCheck('x-metadata-patch', (patch) => {
  for (const [k, v] of Object.entries(patch)) {
    checkMetadataKey(k);
    if (k.startsWith('opensandbox.io/')) throw new BadRequestError(`metadata key '${k}': the opensandbox.io/ prefix is reserved`);
    if (v === null) continue;
    if (typeof v !== 'string' || v.length > 63 || !LABEL.test(v)) {
      throw new BadRequestError(`metadata.${k} must be null or a string of at most 63 characters matching ${LABEL_VALUE}`);
    }
  }
});
const patchCheck = compileCheck(METADATA_PATCH_BODY);

/** A JSON merge patch of metadata (RFC 7396): a string sets, null deletes. */
export function parseMetadataPatch(body: unknown): Record<string, string | null> {
  return patchCheck(body);
}
