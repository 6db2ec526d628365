/**
 * The pool API's description (acquire, execute, release and the rollout additions: poolRoutes.ts, rolloutRoutes.ts) for
 * /openapi.json: the words (summaries, errors, examples); the bodies and answers are the contract's (poolContract.ts).
 */
import { ref, type ApiDoc } from '../../http/openApiTypes';
import { ACQUIRED, acquireBody, acquireGroupBody, ALIVE, GROUP_ACQUIRED, EXECUTE_RESULT, executeBody, HISTORY, JOURNAL_ENTRY, RELEASED } from './poolContract';

const ID = 'f3c1d2e4a5b6978812345678abcdef01';

const ON_LEASE = {
  400: 'the lease ended: released, or reclaimed (`session_not_in_use`, with `reclaimed`)',
  404: 'no session of this id was ever leased (`session_not_found`)',
  410: 'its shell or container died: its state is lost (`session_broken`)',
};
const ACQUIRE_ERRORS = {
  400: 'a bad field: files, startup_commands, request_id, lease_ttl, acquire_timeout, or an unknown pool (`bad_request`, `unknown_pool`)',
  409: 'the same request_id with another body (`request_id_conflict`)',
  413: 'the body or a command is too large (`payload_too_large`)',
  422: 'a startup command killed its shell; no session was leased (`startup_failed`)',
  503: 'no session became free in time (`pool_exhausted`, with queue_length and Retry-After), or shutting down',
};

export const POOL_API_DOC: ApiDoc = {
  tag: 'pool',
  description: 'The pool API: lease a warm bash session, run commands in it, release it; and the additions for rollout clients.',
  errors: 'pool',
  pathParams: { sessionId: { description: 'the session_id an acquire answered', example: ID } },
  schemas: { ExecuteResult: EXECUTE_RESULT, AcquireRequest: acquireBody(), Acquired: ACQUIRED, JournalEntry: JOURNAL_ENTRY },
  operations: {
    'POST /session/acquire': {
      summary: 'Lease a session',
      description: 'Waits in a FIFO queue for a free session, makes its working directory, writes `files`, runs `startup_commands`.',
      body: { schema: ref('AcquireRequest'), required: false, example: { files: { 'data/in.txt': 'aGVsbG8=' }, startup_commands: ['export GREETING=hi'] } },
      responses: { 200: { description: 'the lease', schema: ref('Acquired'), example: { session_id: ID, startup_results: [{ status: 'Success', stdout: '', stderr: '', return_code: 0 }] } } },
      errors: ACQUIRE_ERRORS,
    },
    'POST /session/acquire_group': {
      summary: 'Lease n sessions, all or none',
      body: {
        schema: acquireGroupBody(),
        example: { n: 2, spread: true },
      },
      responses: {
        200: {
          description: 'the sessions, each with its container',
          schema: GROUP_ACQUIRED,
          example: { sessions: [{ session_id: ID, container: 0 }] },
        },
      },
      errors: { ...ACQUIRE_ERRORS, 400: 'a bad field, or a group the pool could never hold (`bad_request`)' },
    },
    'POST /session/:sessionId/execute': {
      summary: 'Run a command in the session (and, with `release`, release it)',
      body: {
        schema: executeBody(),
        example: { command: 'echo hi', timeout: 5 },
      },
      responses: { 200: { description: 'its result (a timeout is `Failed` with return_code -1)', schema: ref('ExecuteResult'), example: { status: 'Success', stdout: 'hi\n', stderr: '', return_code: 0 } } },
      errors: {
        ...ON_LEASE,
        400: 'a bad command or timeout (`bad_request`), or the lease ended (`session_not_in_use`)',
        409: 'another execute runs on the session (`session_busy`), or a request_id conflict',
        413: 'the command is too large (`payload_too_large`)',
        503: 'shutting down (`shutting_down`)',
      },
    },
    'POST /session/:sessionId/release': {
      summary: 'Release the session (instant, idempotent)',
      body: { schema: {}, required: false, description: 'any JSON, ignored' },
      responses: { 200: { description: 'released', schema: RELEASED, example: { status: 'released' } } },
      errors: { 404: ON_LEASE[404] },
    },
    'POST /session/:sessionId/heartbeat': {
      summary: 'Renew the lease (its idle timeout and lease_ttl)',
      body: { schema: {}, required: false, description: 'any JSON, ignored' },
      responses: { 200: { description: 'alive', schema: ALIVE, example: { status: 'alive', lease_ttl: 30 } } },
      errors: ON_LEASE,
    },
    'GET /session/:sessionId/history': {
      summary: "The lease's executes in order (a call on the lease)",
      responses: {
        200: {
          description: 'the journal; `dropped` counts entries older than the kept ones',
          schema: HISTORY,
          example: { session_id: ID, entries: [], dropped: 0 },
        },
      },
      errors: ON_LEASE,
    },
  },
};
