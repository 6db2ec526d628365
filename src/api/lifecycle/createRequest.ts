/**
 * CreateSandboxRequest (POST /v1/sandboxes), written once: the schema /openapi.json shows (its check
 * keywords left out) is the schema each field of a create is checked against, and the rules that
 * tie its fields together are written beside it (CREATE_RULES), in the order a create is refused by
 * them: its unknown fields first, then what the broker does not serve (501: the credential proxy,
 * volumes, signed access) before anything else, then field by field (an egress policy's targets
 * are checked once its shape passed: networkPolicy.ts), one source (an image, a snapshotId or a
 * poolRef) and an entrypoint with an image where their fields come. A field sent as
 * null is a field not sent (secureAccess aside: a boolean). A rejected create starts nothing.
 */
import os from 'node:os';
import { BadRequestError } from '../../common/errors';
import { addDomainCheck, compileCheck } from '../../http/schemaCheck';
import { arrayOf, object, STRING, type Schema } from '../../http/openApiTypes';
import { NETWORK_POLICY_SCHEMA, type NetworkPolicy } from './networkPolicy';

export const NOT_AN_OBJECT = 'The request body must be a JSON object';

export interface TimeoutBounds {
  minSeconds: number;
  maxSeconds: number;
}

/** A create that passed its checks, as the client sent it. */
/** `image.auth`: names credentials the operator configured on the node (docs/images.md). */
export interface ImageAuth {
  username?: string;
  password?: string;
}

export interface CreateRequest {
  image?: { uri: string; auth?: ImageAuth | null } | null;
  /** A snapshot to restore (its id, as POST /v1/sandboxes/{id}/snapshots answered it). */
  snapshotId?: string | null;
  platform?: { os: string; arch: string } | null;
  timeout?: number | null;
  resourceLimits?: { cpu?: string; memory?: string } | null;
  resourceRequests?: Record<string, string> | null;
  env?: Record<string, string> | null;
  metadata?: Record<string, string> | null;
  entrypoint?: string[] | null;
  extensions?: { poolRef?: string; [name: string]: string | undefined } | null;
  networkPolicy?: NetworkPolicy | null;
}

const HOST_ARCH = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[os.arch()] ?? os.arch();

/** The platform a create names must be this host's (the broker runs no emulation). */
addDomainCheck('x-host-platform', (platform) => {
  if (platform.os !== 'linux' || platform.arch !== HOST_ARCH) throw new BadRequestError(`platform ${JSON.stringify(platform)} cannot be satisfied: this broker runs linux/${HOST_ARCH}`);
});

/** An object of strings without NUL bytes. */
function strings(extra: Schema = {}): Schema {
  return { type: 'object', additionalProperties: STRING, 'x-string-map': true, ...extra, 'x-refusal': { type: '{field} must be a JSON object' } };
}

/** A field the broker does not serve: a 501 when sent (not null, false, nor empty). */
function unserved(schema: Schema, refusal: string): Schema {
  return { ...schema, 'x-unserved': { as: 'not_implemented', emptyIsAbsent: true }, 'x-refusal': { 'x-unserved': refusal } };
}

const URI = 'image.uri must be a non-empty string';
const ENTRYPOINT = 'entrypoint must be a non-empty list of strings';

/** The schema; `bounds` (BROKER_SANDBOX_MIN_TIMEOUT, BROKER_SANDBOX_MAX_TIMEOUT) join the route's copy, not the document's. */
export function createSandboxRequest(bounds?: TimeoutBounds): Schema {
  const properties: Record<string, Schema> = {
    image: {
      type: 'object',
      properties: {
        uri: { type: 'string', 'x-not-blank': true, 'x-refusal': { '*': URI } },
        // Checked here for its shape only; whether it names the node's own credentials is the image
        // service's (docs/images.md): a client never hands the node credentials to pull with.
        auth: {
          type: ['object', 'null'],
          properties: { username: { type: 'string', maxLength: 4096 }, password: { type: 'string', maxLength: 4096 } },
          'x-known-fields': { known: ['username', 'password'], refusal: 'image.auth: unknown field(s) {unknown}; it has username and password' },
          'x-refusal': { '*': 'image.auth must be {"username": "<string>", "password": "<string>"}' },
        },
      },
      required: ['uri'],
      'x-known-fields': { known: ['uri', 'auth'], refusal: '{field}: unknown field(s) {unknown}' },
      'x-refusal': { type: 'image must be a JSON object', required: URI },
    },
    snapshotId: {
      type: 'string',
      maxLength: 256,
      'x-not-blank': true,
      description: 'a snapshot to restore: the sandbox is a session of its pool, started from it (docs/lifecycle.md)',
      'x-refusal': { '*': 'snapshotId must be a snapshot id (a non-empty string, as POST /v1/sandboxes/{sandboxId}/snapshots answered it), got {json}' },
    },
    // The document shows the form; the check is whether it names this host (extra fields are let be).
    platform: { type: 'object', 'x-host-platform': true, 'x-refusal': { type: 'platform must be a JSON object' }, 'x-published': object({ os: STRING, arch: STRING }) },
    timeout: {
      type: ['integer', 'null'],
      description: 'seconds until it expires; null: none',
      ...(bounds
        ? {
            minimum: bounds.minSeconds,
            maximum: bounds.maxSeconds,
            'x-refusal': { '*': `timeout must be an integer number of seconds between ${bounds.minSeconds} and ${bounds.maxSeconds} (BROKER_SANDBOX_MAX_TIMEOUT), or null for none; got {json}` },
          }
        : {}),
    },
    resourceLimits: {
      type: 'object',
      properties: { cpu: STRING, memory: STRING },
      additionalProperties: false,
      'x-string-map': true,
      'x-known-fields': { known: ['cpu', 'memory'], refusal: '{field}: {unknown} not served (cpu and memory are)' },
      'x-refusal': { type: 'resourceLimits must be a JSON object' },
    },
    // Kubernetes' requests: checked, meaningless here.
    resourceRequests: strings(),
    env: strings({ 'x-key-pattern': { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', refusal: "{field}: '{key}' is not a valid variable name" } }),
    // An empty key is refused: no list filter could name it (`metadata=k%3Dv` needs a key).
    metadata: strings({ 'x-key-pattern': { pattern: '[\\s\\S]', refusal: "{field} key '{key}': a key must not be empty" } }),
    entrypoint: { ...arrayOf({ type: 'string', 'x-no-nul': true, 'x-refusal': { '*': ENTRYPOINT } }), 'x-not-empty': true, 'x-refusal': { '*': ENTRYPOINT } },
    networkPolicy: NETWORK_POLICY_SCHEMA,
    credentialProxy: unserved({ type: 'object' }, 'credentialProxy: the credential vault proxy is not served by this broker'),
    secureAccess: {
      type: 'boolean',
      'x-unserved': { as: 'not_implemented', emptyIsAbsent: true },
      'x-refusal': { type: 'secureAccess must be a boolean', 'x-unserved': 'secureAccess: signed endpoint access is not served; endpoints take the broker token (OPEN-SANDBOX-API-KEY)' },
    },
    volumes: unserved({ type: 'array' }, 'volumes: storage mounts are not served by this broker'),
    extensions: {
      type: 'object',
      properties: { poolRef: { type: 'string', description: 'a named pool of BROKER_POOLS to serve it from' } },
      additionalProperties: STRING,
      'x-string-map': true,
      'x-unserved-keys': { 'access.renew.extend.seconds': 'extensions.access.renew.extend.seconds: renew-on-access is not served (renew with renew-expiration)' },
      'x-refusal': { type: 'extensions must be a JSON object' },
    },
  };
  const fields = Object.keys(properties);
  return {
    type: 'object',
    description: 'CreateSandboxRequest: exactly one of image and snapshotId (or extensions.poolRef). credentialProxy, volumes and secureAccess: true answer 501, and networkPolicy egress rules for a sandbox in a container of its own; image.auth answers 501 for an image the node does not pull, and 403 unless it names the node\'s own credentials for one it does (docs/images.md).',
    properties,
    additionalProperties: false,
    'x-known-fields': { known: fields, refusal: `unknown field(s) {unknown}; CreateSandboxRequest has ${fields.join(', ')}` },
    'x-refusal': { type: NOT_AN_OBJECT },
  };
}

function poolRefOf(req: CreateRequest): string | null {
  return req.extensions?.poolRef ?? null;
}

/** A rule of a create: throws its refusal, or returns. */
type Rule = (req: CreateRequest) => void;

/** The rules that tie fields together. */
const oneSource: Rule = (req) => {
  // OpenSandbox's pool mode: a pool by name serves its own image. A snapshot names its own pool.
  if (req.snapshotId == null && req.image == null && poolRefOf(req) === null) throw new BadRequestError('image is required: {"uri": "<image>"} (or snapshotId naming a snapshot, or extensions.poolRef naming a pool)');
  if (req.snapshotId == null) return;
  if (req.image != null) throw new BadRequestError('image and snapshotId: give exactly one (a restored sandbox runs its snapshot\'s image)');
  if (poolRefOf(req) !== null) throw new BadRequestError("snapshotId and extensions.poolRef: give one (a restored sandbox is a session of its snapshot's pool)");
};
const entrypointWithImage: Rule = (req) => {
  // An image names no command that keeps its container running; a pool's containers have theirs.
  if (req.entrypoint == null && req.image != null && poolRefOf(req) === null) throw new BadRequestError('entrypoint is required with image: e.g. ["tail", "-f", "/dev/null"]');
};

/** `schema` with only the keywords `keys` (all of them without). */
function only(schema: Schema, keys?: readonly string[]): Schema {
  return keys ? Object.fromEntries(Object.entries(schema).filter(([k]) => keys.includes(k))) : schema;
}

/** The check of one field against its schema (`keys`: those of its keywords alone); null is none, but for secureAccess. */
function field(schema: Schema, name: string, keys?: readonly string[]): Rule {
  const check = compileCheck({ type: 'object', properties: { [name]: only((schema.properties as Record<string, Schema>)[name], keys) } } as never);
  return (req) => {
    const value = (req as Record<string, unknown>)[name];
    if (value === undefined || (value === null && name !== 'secureAccess')) return;
    check(req);
  };
}

/** Every rule of a create, in the order its refusals come. */
function createRules(schema: Schema): Rule[] {
  const shape = ['type', 'x-string-map', 'x-refusal'];
  const unservedOnly = ['x-unserved', 'x-refusal'];
  const knownFields = compileCheck(only(schema, ['type', 'x-known-fields', 'x-refusal']) as never);
  return [
    (req) => void knownFields(req),
    ...['credentialProxy', 'volumes'].map((name) => field(schema, name, unservedOnly)),
    field(schema, 'networkPolicy'),
    field(schema, 'secureAccess'),
    field(schema, 'extensions'),
    field(schema, 'snapshotId'),
    oneSource,
    field(schema, 'image'),
    field(schema, 'platform'),
    field(schema, 'resourceLimits', shape),
    field(schema, 'resourceRequests'),
    field(schema, 'resourceLimits'),
    field(schema, 'env'),
    entrypointWithImage,
    field(schema, 'entrypoint'),
    field(schema, 'metadata'),
    field(schema, 'timeout'),
  ];
}

/** The route's check of a create, under `bounds`: the body as sent, once every rule passed. */
export function createCheck(bounds: TimeoutBounds): (body: unknown) => CreateRequest {
  const isObject = compileCheck({ type: 'object', 'x-refusal': { type: NOT_AN_OBJECT } } as never);
  const rules = createRules(createSandboxRequest(bounds));
  return (body) => {
    const req = isObject(body) as CreateRequest;
    for (const rule of rules) rule(req);
    return req;
  };
}
