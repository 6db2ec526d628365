/** The execd API's shared schemas and path parameters, for its two descriptions (processes, files). */
import { arrayOf, INTEGER, object, STRING, type PathParamDoc, type Schema } from '../../http/openApiTypes';

export const SANDBOX_ID = 'f3c1d2e4a5b6978812345678abcdef01';

const SANDBOX: PathParamDoc = { description: 'a pool session_id (or a lifecycle sandbox id)', example: SANDBOX_ID };
export const EXECD_PATH_PARAMS: Record<string, PathParamDoc> = { sandboxId: SANDBOX, id: SANDBOX };

/** On every execd route: the sandbox's own answers. */
export const SANDBOX_ERRORS: Record<number, string> = {
  400: 'a bad request, or the sandbox ended (released or reclaimed)',
  404: 'no such sandbox, or no such command, session or context',
  410: 'the sandbox broke (its shell or container died)',
};

export const EXECD_SCHEMAS: Record<string, Schema> = {
  ExecdEvent: {
    type: 'object',
    description: 'One server-sent event (`data: <json>`) of a command, session run or code run.',
    properties: {
      type: { enum: ['init', 'stdout', 'stderr', 'execution_count', 'result', 'execution_complete', 'error', 'ping'] },
      text: STRING,
      timestamp: INTEGER,
      execution_count: INTEGER,
      execution_time: INTEGER,
      results: { type: 'object', additionalProperties: STRING },
      error: object({ ename: STRING, evalue: STRING, traceback: arrayOf(STRING) }),
    },
    required: ['type', 'timestamp'],
    additionalProperties: false,
  },
  FileInfo: object({
    path: STRING,
    type: { enum: ['file', 'directory', 'symlink', 'other'] },
    size: INTEGER,
    modified_at: { type: 'string', format: 'date-time' },
    created_at: { type: 'string', format: 'date-time' },
    owner: STRING,
    group: STRING,
    mode: { type: 'integer', description: 'octal digits written as an integer (755)' },
  }),
  Permission: object({ mode: INTEGER, owner: STRING, group: STRING }, ['mode']),
  CodeContext: object({ id: STRING, language: { enum: ['bash', 'python'] } }),
};
