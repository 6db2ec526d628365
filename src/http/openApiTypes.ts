/**
 * What an API contributes to the OpenAPI document (openApiDocument.ts builds it): its operations,
 * keyed by the router's own route ('POST /session/:sessionId/execute', 'WS /ws/workspace' for a
 * WebSocket), with schemas, examples and the errors each can answer. An API's routes are declared
 * in its contract (contract.ts: apiDocOf turns one into this), listed once in apiDocs.ts; the
 * coverage test (test/http/openapi.test.ts) fails for a route with no description and for a
 * description with no route.
 */

/** A JSON Schema (2020-12, as OpenAPI 3.1 uses it). */
export type Schema = Record<string, unknown>;

/** Which error body the API answers: the pool's `{detail, code}` or OpenSandbox's `{code, message}`. */
export type ErrorStyle = 'pool' | 'opensandbox';

export interface ParamDoc {
  name: string;
  in: 'query' | 'header';
  description: string;
  schema: Schema;
  required?: boolean;
  example?: unknown;
}

export interface BodyDoc {
  schema: Schema;
  example?: unknown;
  /** Default application/json. */
  contentType?: string;
  description?: string;
  /** Default: true for JSON bodies without a default of their own. */
  required?: boolean;
}

export interface ReplyDoc {
  description: string;
  schema?: Schema;
  example?: unknown;
  /** Default application/json (when there is a schema). */
  contentType?: string;
  headers?: Record<string, { description: string; schema: Schema }>;
}

export interface OperationDoc {
  summary: string;
  description?: string;
  params?: ParamDoc[];
  body?: BodyDoc;
  /** Successful answers by status. */
  responses: Record<string, ReplyDoc>;
  /**
   * Error answers by status: when each happens. In the pool style a `code` written in backticks is the
   * example's (`404: 'no such session (`session_not_found`)'`). 401 is added to every guarded route.
   */
  errors?: Record<number, string>;
}

export interface PathParamDoc {
  description: string;
  example: string;
  schema?: Schema;
}

export interface ApiDoc {
  /** The tag its operations are listed under in /docs. */
  tag: string;
  description: string;
  errors: ErrorStyle;
  /** Path parameters by name (`sessionId`), shared by its routes. */
  pathParams?: Record<string, PathParamDoc>;
  operations: Record<string, OperationDoc>;
  /** Schemas it names with `ref(name)`, gathered into components.schemas. */
  schemas?: Record<string, Schema>;
}

/** A reference to a schema of components.schemas. */
export function ref(name: string): Schema {
  return { $ref: `#/components/schemas/${name}` };
}

/** A JSON object schema: every property listed, `required` those named, nothing else allowed unless `open`. */
export function object(properties: Record<string, Schema>, required: string[] = Object.keys(properties), open = false): Schema {
  return { type: 'object', properties, required, additionalProperties: open };
}

export const STRING: Schema = { type: 'string' };
export const INTEGER: Schema = { type: 'integer' };
export const NUMBER: Schema = { type: 'number' };
export const BOOLEAN: Schema = { type: 'boolean' };

export function nullable(schema: Schema): Schema {
  return { anyOf: [schema, { type: 'null' }] };
}

export function arrayOf(items: Schema): Schema {
  return { type: 'array', items };
}

/** A schema with its description. */
export function described(schema: Schema, description: string): Schema {
  return { ...schema, description };
}
