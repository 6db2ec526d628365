/** The two error bodies (errorFormats.ts), as every API's error answers reference them. */
import type { Schema } from './openApiTypes';

export const ERROR_SCHEMAS: Record<string, Schema> = {
  PoolError: {
    type: 'object',
    description: "The pool format: `detail` for people, `code` for programs, and fields of some codes beside them (`queue_length` of a 503 pool_exhausted, `reclaimed` of a reclaimed lease's 400, `job_id` of a 409 workspace_busy).",
    properties: {
      detail: { type: 'string' },
      code: { type: 'string', examples: ['session_not_found'] },
      queue_length: { type: 'integer', minimum: 0 },
      reclaimed: { type: 'string', enum: ['idle_timeout', 'lease_ttl', 'operator'] },
      job_id: { type: 'string' },
    },
    required: ['detail', 'code'],
    additionalProperties: { type: ['string', 'number'] },
  },
  OpenSandboxError: {
    type: 'object',
    description: "OpenSandbox's format (execd and lifecycle APIs).",
    properties: {
      code: {
        type: 'string',
        description: 'INVALID_REQUEST_BODY (400, 413), NOT_SUPPORTED, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, FILE_NOT_FOUND, RANGE_NOT_SATISFIABLE, RUNTIME_ERROR (409, 410, 5xx)',
        examples: ['NOT_FOUND'],
      },
      message: { type: 'string' },
    },
    required: ['code', 'message'],
    additionalProperties: false,
  },
};
