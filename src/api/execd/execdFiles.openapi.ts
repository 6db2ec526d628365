/** execd's files, directories and metrics routes (execdFileRoutes.ts, execdMetricsRoutes.ts: OpenSandbox's execd API) for /openapi.json. */
import { arrayOf, NUMBER, object, ref, STRING, type ApiDoc, type ParamDoc, type ReplyDoc } from '../../http/openApiTypes';
import { EXECD_PATH_PARAMS, SANDBOX_ERRORS, SANDBOX_ID } from './execdSchemas';

const P = '/sandboxes/:id/execd';
const PATHS: ParamDoc = { name: 'path', in: 'query', required: true, description: 'a path (repeat for several); absolute, or relative to the working directory', schema: STRING, example: 'notes.txt' };
const EMPTY: Record<string, ReplyDoc> = { 200: { description: 'done (an empty body)' } };
const FILE_ERRORS: Record<number, string> = {
  ...SANDBOX_ERRORS,
  403: 'the path leaves the working directory (`FORBIDDEN`)',
  404: 'no such sandbox, or no such file (`FILE_NOT_FOUND`)',
  413: 'over a limit (`INVALID_REQUEST_BODY`)',
};
const PERMISSIONS = { type: 'object', additionalProperties: ref('Permission'), description: 'path -> {mode, owner?, group?}' };
const METRICS = object({ cpu_count: NUMBER, cpu_used_pct: NUMBER, mem_total_mib: NUMBER, mem_used_mib: NUMBER, timestamp: { type: 'integer' }, scope: STRING });

export const EXECD_FILES_API_DOC: ApiDoc = {
  tag: 'execd files',
  description: "execd's files, directories and metrics, inside the sandbox's working directory.",
  errors: 'opensandbox',
  pathParams: EXECD_PATH_PARAMS,
  operations: {
    [`GET ${P}/files/info`]: {
      summary: 'FileInfo of each path (symlinks followed)',
      params: [PATHS],
      responses: {
        200: {
          description: 'path -> FileInfo',
          schema: { type: 'object', additionalProperties: ref('FileInfo') },
          example: { 'notes.txt': { path: `/tmp/s/${SANDBOX_ID}/notes.txt`, type: 'file', size: 6, modified_at: '2026-01-01T00:00:00.000Z', created_at: '2026-01-01T00:00:00.000Z', owner: 'root', group: 'root', mode: 644 } },
        },
      },
      errors: FILE_ERRORS,
    },
    [`DELETE ${P}/files`]: { summary: 'Delete files', params: [PATHS], responses: EMPTY, errors: FILE_ERRORS },
    [`POST ${P}/files/permissions`]: { summary: 'chmod and chown', body: { schema: PERMISSIONS, example: { 'run.sh': { mode: 755 } } }, responses: EMPTY, errors: FILE_ERRORS },
    [`POST ${P}/files/mv`]: {
      summary: 'Rename files',
      body: { schema: arrayOf(object({ src: STRING, dest: STRING })), example: [{ src: 'a.txt', dest: 'b.txt' }] },
      responses: EMPTY,
      errors: FILE_ERRORS,
    },
    [`GET ${P}/files/search`]: {
      summary: 'Files below a directory matching a glob',
      params: [{ ...PATHS, description: 'the directory' }, { name: 'pattern', in: 'query', description: 'a glob, default **', schema: STRING, example: '*.txt' }],
      responses: { 200: { description: 'FileInfo list, in path order', schema: arrayOf(ref('FileInfo')) } },
      errors: FILE_ERRORS,
    },
    [`POST ${P}/files/replace`]: {
      summary: 'Replace text in files, byte for byte',
      params: [{ name: 'verbose', in: 'query', description: 'true: answer the counts', schema: { enum: ['true', 'false'] } }],
      body: { schema: { type: 'object', additionalProperties: object({ old: STRING, new: STRING }) }, example: { 'notes.txt': { old: 'hello', new: 'bye' } } },
      responses: { 200: { description: 'empty; with verbose=true, path -> {replacedCount}', schema: { type: 'object', additionalProperties: object({ replacedCount: { type: 'integer' } }) } } },
      errors: FILE_ERRORS,
    },
    [`POST ${P}/files/upload`]: {
      summary: 'Upload files (multipart: a metadata part, then a file part, repeated)',
      body: {
        contentType: 'multipart/form-data',
        schema: { type: 'object', properties: { metadata: { type: 'string', description: 'JSON {path, mode?, owner?, group?}' }, file: { type: 'string', contentMediaType: 'application/octet-stream' } } },
      },
      responses: EMPTY,
      errors: FILE_ERRORS,
    },
    [`GET ${P}/files/download`]: {
      summary: "A file's bytes (Range, or offset and limit, for a part)",
      params: [
        PATHS,
        { name: 'offset', in: 'query', description: 'first byte (instead of Range)', schema: { type: 'integer', minimum: 0 } },
        { name: 'limit', in: 'query', description: 'bytes (instead of Range)', schema: { type: 'integer', minimum: 0 } },
        { name: 'Range', in: 'header', description: 'bytes=a-b, a- or -n', schema: STRING },
      ],
      responses: {
        200: { description: 'the bytes', contentType: 'application/octet-stream', schema: STRING },
        206: { description: 'the range asked for, with Content-Range', contentType: 'application/octet-stream', schema: STRING },
      },
      errors: { ...FILE_ERRORS, 416: 'the range starts past the end, or is malformed (`RANGE_NOT_SATISFIABLE`)' },
    },
    [`GET ${P}/directories/list`]: {
      summary: 'Entries below a directory, depth levels down',
      params: [{ ...PATHS, description: 'the directory' }, { name: 'depth', in: 'query', description: 'default 1', schema: { type: 'integer', minimum: 1 } }],
      responses: { 200: { description: 'FileInfo list', schema: arrayOf(ref('FileInfo')) } },
      errors: FILE_ERRORS,
    },
    [`POST ${P}/directories`]: { summary: 'mkdir -p, then mode and owner', body: { schema: PERMISSIONS, example: { 'out/logs': { mode: 755 } } }, responses: EMPTY, errors: FILE_ERRORS },
    [`DELETE ${P}/directories`]: { summary: 'rm -rf directories', params: [PATHS], responses: EMPTY, errors: FILE_ERRORS },
    [`GET ${P}/metrics`]: {
      summary: "The sandbox's CPU and memory",
      responses: { 200: { description: 'one report; scope says what was measured', schema: METRICS, example: { cpu_count: 1, cpu_used_pct: 3.5, mem_total_mib: 768, mem_used_mib: 12.4, timestamp: 1795623330962, scope: 'container cgroup' } } },
      errors: SANDBOX_ERRORS,
    },
    [`GET ${P}/metrics/watch`]: {
      summary: 'The same report once a second (SSE) until the client leaves',
      responses: { 200: { description: 'server-sent events, `data: <metrics JSON>`; an `error` event when the sandbox ends', contentType: 'text/event-stream', schema: STRING } },
      errors: SANDBOX_ERRORS,
    },
  },
};
