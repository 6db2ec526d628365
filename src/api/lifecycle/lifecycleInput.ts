/**
 * The lifecycle API's requests checked against their contract (lifecycleContract.ts): a
 * CreateSandboxRequest (its schema and rules: createRequest.ts), RenewSandboxExpirationRequest, a
 * metadata merge patch; and the list query. Everything is checked before anything is started, so a
 * rejected request creates nothing. What the broker does not serve (egress rules by domain,
 * volumes) is refused with 501, never ignored. Also the snapshots' list query.
 */
import os from 'node:os';
import { BadRequestError } from '../../common/errors';
import { parseImageRef } from '../../core/images/imageRef';
import type { SandboxSpec } from '../../core/lifecycle/sandboxRecord';
import type { SandboxFilter } from '../../core/lifecycle/sandboxService';
import { addDomainCheck, compileCheck } from '../../http/schemaCheck';
import { parseCpus, parseMemoryBytes } from './quantities';
import { LABEL_VALUE, METADATA_PATCH_BODY, RENEW_BODY } from './lifecycleContract';
import { createCheck, type CreateRequest, type TimeoutBounds } from './createRequest';
import { egressOf } from './networkPolicy';

export type { TimeoutBounds } from './createRequest';

export interface CreateInput extends SandboxSpec {
  /** `extensions.poolRef`: the named pool to serve it from (OpenSandbox's pool mode). */
  poolRef: string | null;
}

/**
 * image.uri in Docker's grammar before the engine is asked about it: the engine's client puts a name
 * into a URL path as it is, and a name with `..` segments (`../x`) made it throw outside any request
 * (the engine's redirect sent it to a host named `json`), which ended the broker's process.
 */
function imageUri(uri: string): string {
  parseImageRef(uri, 'image.uri');
  return uri;
}

/** The create a checked request asks for; its cpu and memory quantities are read here (a 400 when they are none). */
function createInput(req: CreateRequest): CreateInput {
  const image = req.image == null ? null : imageUri(req.image.uri.trim());
  // A restore's image is its snapshot's pool's (sandboxSnapshots.ts).
  const snapshotId = req.snapshotId ?? undefined;
  const limits = req.resourceLimits ?? {};
  const network = egressOf(req.networkPolicy);
  return {
    image: image ?? '',
    poolRef: req.extensions?.poolRef ?? null,
    entrypoint: req.entrypoint ?? ['tail', '-f', '/dev/null'],
    env: req.env ?? {},
    metadata: req.metadata ?? {},
    timeoutMs: req.timeout == null ? null : req.timeout * 1000,
    cpus: limits.cpu === undefined ? null : parseCpus(limits.cpu, os.cpus().length),
    memoryBytes: limits.memory === undefined ? null : parseMemoryBytes(limits.memory),
    ...(req.image?.auth != null ? { imageAuth: req.image.auth } : {}),
    ...(snapshotId !== undefined ? { snapshotId } : {}),
    ...(network ? { network: network.network, ...(network.rules.length > 0 ? { egressRules: network.rules } : {}) } : {}),
  };
}

/** The parser of creates under `bounds` (its check compiled once). */
export function createParser(bounds: TimeoutBounds): (body: unknown) => CreateInput {
  const check = createCheck(bounds);
  return (body) => createInput(check(body));
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

/** GET /v1/snapshots: `?sandboxId=&name=&state=Ready&page=1&pageSize=20`. */
export interface SnapshotFilter {
  sandboxId: string | null;
  name: string | null;
  states: readonly string[];
  page: number;
  pageSize: number;
}

export function parseSnapshotListQuery(query: string, knownStates: readonly string[]): SnapshotFilter {
  const params = new URLSearchParams(query);
  const states = params.getAll('state');
  const bad = states.filter((s) => !knownStates.includes(s));
  if (bad.length > 0) throw new BadRequestError(`state ${bad.map((s) => JSON.stringify(s.slice(0, 100))).join(', ')} is not a snapshot state (${knownStates.join(', ')})`);
  return {
    sandboxId: params.get('sandboxId'),
    name: params.get('name'),
    states,
    page: positive(params.get('page'), 1, 'page', Number.MAX_SAFE_INTEGER),
    pageSize: positive(params.get('pageSize'), 20, 'pageSize', MAX_PAGE_SIZE),
  };
}

function positive(raw: string | null, dflt: number, name: string, max: number): number {
  if (raw === null) return dflt;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > max) throw new BadRequestError(`${name} must be an integer between 1 and ${max}, got '${raw}'`);
  return n;
}

const LABEL = new RegExp(LABEL_VALUE);

/** Entry by entry: its key, then its value. */
addDomainCheck('x-metadata-patch', (patch) => {
  for (const [k, v] of Object.entries(patch)) {
    // An empty key is refused: no list filter could name it (`metadata=k%3Dv` needs a key).
    if (k === '') throw new BadRequestError("metadata key '': a key must not be empty");
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
