/**
 * Builds the OpenAPI 3.1 document from every API's description (apiDocs.ts) and the routes the seam
 * actually registered: it shows those routes (a gateway's own, or an API this broker does not mount,
 * is not shown), each route's security follows its router (a public route needs no token),
 * every guarded route gets its 401, and each error answer gets the body of its API's error format.
 * Schemas that also drive input checks are shown without the checks' own keywords (publishedSchema).
 */
import type { ApiDoc, ErrorStyle, OperationDoc, ReplyDoc, Schema } from './openApiTypes';
import { ref } from './openApiTypes';
import { ERROR_SCHEMAS } from './errorSchemas';
import type { RegisteredRoute } from './seam';
import { publishedSchema } from './schemaCheck';


/** `/session/:sessionId/execute` -> `/session/{sessionId}/execute`; a rest parameter `*path` -> `{path}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/\/[:*]([A-Za-z_]\w*)/g, '/{$1}');
}

export function routeKey(route: Pick<RegisteredRoute, 'method' | 'path'>): string {
  return `${route.method} ${route.path}`;
}

const POOL_CODE_OF_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'session_busy',
  410: 'session_broken',
  413: 'payload_too_large',
  416: 'range_not_satisfiable',
  422: 'startup_failed',
  503: 'shutting_down',
};
const OPEN_SANDBOX_CODE_OF_STATUS: Record<number, string> = { 400: 'INVALID_REQUEST_BODY', 401: 'UNAUTHORIZED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 413: 'INVALID_REQUEST_BODY', 416: 'RANGE_NOT_SATISFIABLE' };
const UNAUTHORIZED = 'Missing or invalid access token: send Authorization: Bearer <token> or X-EXECD-ACCESS-TOKEN';

function errorReply(style: ErrorStyle, status: number, when: string): Record<string, unknown> {
  const named = /`([A-Za-z_]+)`/.exec(when)?.[1];
  const message = when.replace(/`/g, '');
  const example =
    style === 'pool'
      ? { detail: message, code: named ?? POOL_CODE_OF_STATUS[status] ?? 'internal' }
      : { code: named ?? OPEN_SANDBOX_CODE_OF_STATUS[status] ?? 'RUNTIME_ERROR', message };
  return { description: message, content: { 'application/json': { schema: ref(style === 'pool' ? 'PoolError' : 'OpenSandboxError'), example } } };
}

function reply(r: ReplyDoc): Record<string, unknown> {
  const out: Record<string, unknown> = { description: r.description };
  if (r.schema) out.content = { [r.contentType ?? 'application/json']: { schema: publishedSchema(r.schema), ...(r.example !== undefined ? { example: r.example } : {}) } };
  if (r.headers) out.headers = r.headers;
  return out;
}

function operationId(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return [method.toLowerCase(), ...words.map((w) => w[0].toUpperCase() + w.slice(1))].join('');
}

function operation(doc: ApiDoc, method: string, pattern: string, op: OperationDoc, route: RegisteredRoute): Record<string, unknown> {
  const pathParams = [...pattern.matchAll(/\/[:*]([A-Za-z_]\w*)/g)].map(([, name]) => {
    const p = doc.pathParams?.[name];
    return { name, in: 'path', required: true, description: p?.description ?? name, schema: p?.schema ?? { type: 'string' }, ...(p ? { example: p.example } : {}) };
  });
  const responses: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(op.responses)) responses[status] = reply(r);
  const guarded = !route.public;
  const errors: Record<number, string> = { ...op.errors };
  if (guarded) errors[401] = UNAUTHORIZED;
  for (const [status, when] of Object.entries(errors)) responses[status] = errorReply(doc.errors, Number(status), when);
  const out: Record<string, unknown> = {
    tags: [doc.tag],
    summary: op.summary,
    operationId: operationId(method === 'WS' ? 'ws' : method, pattern),
    ...(op.description ? { description: op.description } : {}),
    parameters: [...pathParams, ...(op.params ?? []).map((p) => ({ ...p, schema: publishedSchema(p.schema) }))],
    responses,
  };
  if (op.body) {
    const b = op.body;
    const media = { schema: publishedSchema(b.schema), ...(b.example !== undefined ? { example: b.example } : {}) };
    out.requestBody = { required: b.required ?? true, ...(b.description ? { description: b.description } : {}), content: { [b.contentType ?? 'application/json']: media } };
  }
  if (!guarded) out.security = [];
  return out;
}

export interface BuiltDocument {
  document: Record<string, unknown>;
  /** Registered routes no API describes (the coverage test lists them). */
  undocumented: string[];
}

export function buildOpenApi(docs: readonly ApiDoc[], routes: readonly RegisteredRoute[], version: string): BuiltDocument {
  const byKey = new Map(routes.map((r) => [routeKey(r), r]));
  const described = new Set<string>();
  const shownTags = new Set<string>();
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: Record<string, Schema> = { ...ERROR_SCHEMAS };
  for (const doc of docs) {
    for (const [name, schema] of Object.entries(doc.schemas ?? {})) {
      if (schemas[name] && schemas[name] !== schema) throw new Error(`OpenAPI schema '${name}' is defined twice (API '${doc.tag}')`);
      schemas[name] = schema;
    }
    for (const [key, op] of Object.entries(doc.operations)) {
      const route = byKey.get(key);
      if (!route) continue;
      const space = key.indexOf(' ');
      const method = key.slice(0, space);
      const pattern = key.slice(space + 1);
      described.add(key);
      shownTags.add(doc.tag);
      const item = (paths[openApiPath(pattern)] ??= {});
      const built = operation(doc, method, pattern, op, route);
      // A WebSocket is a GET answered 101; beside an HTTP GET of the same path, its answers join that one's.
      const verb = method === 'WS' ? 'get' : method.toLowerCase();
      const earlier = item[verb] as Record<string, unknown> | undefined;
      if (earlier) Object.assign(earlier.responses as object, built.responses);
      else item[verb] = built;
    }
  }
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'bash-session broker',
      version,
      description:
        'Warm bash sessions leased over HTTP, and the APIs around them. Every route but the public ones (GET /health, the pages, this document) needs the token (BROKER_TOKEN) when one is set. Errors: the pool format `{detail, code}`, or OpenSandbox\'s `{code, message}` under /sandboxes and /v1.',
    },
    tags: docs.filter((d) => shownTags.has(d.tag)).map((d) => ({ name: d.tag, description: d.description })),
    security: [{ bearer: [] }, { execdToken: [] }, { openSandboxKey: [] }],
    paths,
    components: {
      schemas: publishedSchema(schemas),
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <BROKER_TOKEN>; a browser WebSocket offers the subprotocol bearer.<token>' },
        execdToken: { type: 'apiKey', in: 'header', name: 'X-EXECD-ACCESS-TOKEN', description: 'The same token, as OpenSandbox execd clients send it' },
        openSandboxKey: { type: 'apiKey', in: 'header', name: 'OPEN-SANDBOX-API-KEY', description: 'The same token, as OpenSandbox lifecycle clients send it' },
      },
    },
  };
  const undocumented = routes.map(routeKey).filter((k) => !described.has(k));
  return { document, undocumented };
}
