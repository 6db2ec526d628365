/**
 * The pool API's three hot routes (acquire, execute, release) served by fastify, the way the broker
 * would serve them if it adopted fastify: route schemas drive ajv validation of params and bodies and
 * fast-json-stringify serialization of the answers, @fastify/swagger builds an OpenAPI document from
 * them, and @fastify/websocket is registered (with one WebSocket route) so its hooks are on every
 * request as they would be in the broker. Over the SAME PoolRegistry as the current kernel's routes,
 * so the two kernels differ in their HTTP layer only.
 *
 * What stays the broker's: the domain checks no JSON Schema says (a command's size in bytes, NUL
 * bytes: parseExecute and parseAcquire run after the schema), the pool calls, the answer shapers
 * (executeResponse, acquireResponse) and the error bodies (poolErrorFormat, from one error handler).
 */
import fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import websocket from '@fastify/websocket';
import type { PoolRegistry } from '../../src/core/pool/poolRegistry';
import type { RequestIds } from '../../src/core/pool/requestIds';
import { BadRequestError, BrokerError, PayloadTooLargeError, ShuttingDownError } from '../../src/common/errors';
import { parseAcquire, parseExecute } from '../../src/api/pool/poolInput';
import type { CommandLimits } from '../../src/core/session/sessionInput';
import { acquireResponse, executeResponse } from '../../src/api/pool/poolRoutes';
import { poolErrorFormat } from '../../src/http/errorFormats';
import { createAuthorize, UnauthorizedError } from '../../src/http/auth';
import { POOL_CONTRACT } from '../../src/api/pool/poolContract';
import { apiDocOf } from '../../src/http/contract';
import type { Schema } from '../../src/http/openApiTypes';

const POOL_API_DOC = apiDocOf(POOL_CONTRACT);

const SESSION_PARAMS = { type: 'object', properties: { sessionId: { type: 'string', minLength: 1 } }, required: ['sessionId'] };

/** The schema with every `#/components/schemas/X` of the pool API's document put in its place. */
function inline(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(inline);
  if (schema === null || typeof schema !== 'object') return schema;
  const { $ref } = schema as { $ref?: string };
  if (typeof $ref === 'string') return inline(POOL_API_DOC.schemas?.[$ref.replace('#/components/schemas/', '')]);
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, inline(value)]));
}

/** The request and answer schemas the broker's OpenAPI document already declares for the route. */
function operation(key: string): { body: Schema; answer: Schema } {
  const op = POOL_API_DOC.operations[key];
  return { body: inline(op.body?.schema) as Schema, answer: inline(op.responses[200].schema) as Schema };
}

/** fastify's own refusals (schema validation, a body parser's) as the broker's errors; anything else stays a 500. */
function clientError(err: FastifyError): unknown {
  if (err.validation) return new BadRequestError(err.message);
  if (err.statusCode === 413) return new PayloadTooLargeError(err.message);
  if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) return new BadRequestError(err.message);
  return err;
}

export interface FastifyPoolOptions {
  pools: PoolRegistry;
  limits: CommandLimits;
  requestIds: RequestIds;
  token: string | null;
  maxBodyBytes: number;
}

export async function fastifyPoolApp({ pools, limits, requestIds, token, maxBodyBytes }: FastifyPoolOptions): Promise<FastifyInstance> {
  const app = fastify({
    logger: false,
    bodyLimit: maxBodyBytes,
    keepAliveTimeout: 65_000,
    // The broker's semantics: no coercion ("5" is not a timeout) and unknown fields are ignored, not stripped.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, strict: false } },
  });
  await app.register(swagger, { openapi: { info: { title: 'bash-session-broker pool API', version: '0.1.0' } } });
  await app.register(websocket);

  // Any content type is read as JSON, as the current kernel does (curl -d sends form encoding).
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, text, done) => {
    try {
      done(null, text === '' ? undefined : JSON.parse(text as string));
    } catch (err) {
      done(new BadRequestError(`Request body is not valid JSON: ${(err as Error).message}`), undefined);
    }
  });
  const authorize = createAuthorize(token);
  app.addHook('onRequest', async (req) => {
    if (!authorize(req.raw)) throw new UnauthorizedError();
  });
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const domain = err instanceof BrokerError ? err : clientError(err);
    const out = poolErrorFormat.reply(domain, `${req.method} ${req.url}`);
    void reply.code(out.status).headers(out.headers).type('application/json; charset=utf-8').send(out.body);
  });

  const acquire = operation('POST /session/acquire');
  app.post('/session/acquire', { schema: { body: acquire.body, response: { 200: acquire.answer } } }, async (req) => {
    const input = parseAcquire(req.body, limits);
    const pool = pools.pool(input.pool);
    const request = { ...input, signal: undefined };
    const result = input.requestId ? await requestIds.run(`a:${input.requestId}`, input.fingerprint(), 'acquire', () => pool.acquire(request)) : await pool.acquire(request);
    return acquireResponse(result, input, limits);
  });

  const execute = operation('POST /session/:sessionId/execute');
  app.post<{ Params: { sessionId: string } }>(
    '/session/:sessionId/execute',
    { schema: { params: SESSION_PARAMS, body: execute.body, response: { 200: execute.answer } } },
    async (req) => {
      const input = parseExecute(req.body, limits);
      const { sessionId } = req.params;
      const pool = pools.owning(sessionId);
      if (pool.isClosing) throw new ShuttingDownError();
      const timeoutMs = Math.round(input.timeoutSeconds * 1000);
      const result = await pool.execute(sessionId, { command: input.command, timeoutMs, facts: input.facts ?? false, requestId: input.requestId ?? undefined });
      return executeResponse(result, input.timeoutSeconds, input.facts ?? false);
    },
  );

  const release = operation('POST /session/:sessionId/release');
  app.post<{ Params: { sessionId: string } }>('/session/:sessionId/release', { schema: { params: SESSION_PARAMS, response: { 200: release.answer } } }, async (req) => {
    pools.owning(req.params.sessionId).release(req.params.sessionId);
    return { status: 'released' };
  });

  // Registered, never driven: what @fastify/websocket adds to every request is in the figures.
  app.get('/session/:sessionId/watch', { websocket: true }, (socket) => socket.close());
  return app;
}
