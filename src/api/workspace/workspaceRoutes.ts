/**
 * The workspace API (shared PTY workspaces): a thin router over core/workspace. Every route exists
 * twice: on the root paths for the default workspace, and under /workspaces/{id} for named ones.
 */
import type { RouteContext, Route, Router, UpgradeRoute } from '../../http/router';
import type { Workspaces } from '../../core/workspace/workspaces';
import type { WorkspaceFiles } from '../../core/workspace/workspaceFiles';
import type { Workspace } from '../../core/workspace/workspace';
import { brokerError } from '../../common/errors';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendJson, sendJsonStreamed } from '../../http/httpJson';
import {
  DEFAULT_LOG_LIMIT,
  DEFAULT_PARTIAL_BYTES,
  MAX_LOG_LIMIT,
  encodeContent,
  filenameParam,
  intParam,
  parseInput,
  parseWorkspaceExecute,
  parseWrite,
} from './workspaceInput';
import type { WebSocket } from 'ws';
import { acceptEventStream, acceptTerminal, type SocketOptions } from './workspaceSockets';

/** A WebSocket whose workspace ended between the handshake's check and the socket (rare). */
const CLOSE_NOT_FOUND = 4404;

/** The workspace API's deprecated endpoints: not served, and the answer says what to use. */
class DeprecatedEndpointError extends brokerError('gone', 'deprecated_endpoint', (path: string) => `${path} is deprecated and not served: use POST /api/execute (its answer has the output so far; /ws/workspace streams the rest)`) {}

export interface WorkspaceRouterOptions extends SocketOptions {
  maxCommandBytes: number;
}

const PREFIXES = [
  { prefix: '', id: (): string | null => null },
  { prefix: '/workspaces/:workspaceId', id: (params: Readonly<Record<string, string>>): string | null => params.workspaceId },
];

export function workspaceRouter(workspaces: Workspaces, files: WorkspaceFiles, options: WorkspaceRouterOptions): Router {
  const routes: Route[] = [
    {
      method: 'POST',
      path: '/workspaces',
      body: 'json',
      async handle({ res }) {
        const ws = await workspaces.create();
        sendJson(res, 201, { workspace_id: ws.id, workdir: ws.workdir });
      },
    },
    {
      method: 'GET',
      path: '/workspaces',
      handle({ res }) {
        sendJson(res, 200, workspaces.list().map((ws) => ({ workspace_id: ws.id, workdir: ws.workdir, running_job_id: ws.runningJobId })));
      },
    },
    {
      method: 'DELETE',
      path: '/workspaces/:workspaceId',
      async handle({ params, res }) {
        await workspaces.end(params.workspaceId);
        sendJson(res, 200, { workspace_id: params.workspaceId, status: 'ended' });
      },
    },
  ];
  const upgrades: UpgradeRoute[] = [];
  for (const { prefix, id } of PREFIXES) {
    const resolve = (ctx: { params: Readonly<Record<string, string>> }): Promise<Workspace> => workspaces.resolve(id(ctx.params));
    const on = (method: Route['method'], path: string, handle: (ws: Workspace, ctx: RouteContext) => Promise<void> | void, body = false): Route => ({
      method,
      path: prefix + path,
      ...(body ? { body: 'json' as const } : {}),
      handle: async (ctx) => handle(await resolve(ctx), ctx),
    });
    routes.push(
      on(
        'POST',
        '/api/execute',
        async (ws, { body, res }) => {
          const { command, waitMs } = parseWorkspaceExecute(body, options);
          await sendJsonStreamed(res, 200, { ...(await ws.execute(command, waitMs)) });
        },
        true,
      ),
      on('POST', '/api/interrupt', (ws, { res }) => sendJson(res, 200, { job_id: ws.interrupt() }), true),
      on(
        'POST',
        '/api/input',
        (ws, { body, res }) => {
          ws.input(parseInput(body));
          sendJson(res, 200, { status: 'sent' });
        },
        true,
      ),
      on('GET', '/api/workspace/logs', (ws, { query, res }) => {
        const q = new URLSearchParams(query);
        const offset = intParam(q, 'offset', 0, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
        const limit = intParam(q, 'limit', DEFAULT_LOG_LIMIT, 1, MAX_LOG_LIMIT);
        const from = offset < 0 ? Math.max(0, ws.events.next + offset) : offset;
        const { dropped, events } = ws.events.slice(from, limit);
        const headers = { 'X-Workspace-Log-Start': String(ws.events.start), 'X-Workspace-Log-Next': String(ws.events.next) };
        sendJson(res, 200, dropped ? [dropped, ...events] : events, headers);
      }),
      on(
        'POST',
        '/api/write',
        async (ws, { body, res }) => {
          const { filename, content } = parseWrite(body);
          const path = await files.write(ws, filename, content);
          sendJson(res, 200, { filename, path, bytes_written: content.length });
        },
        true,
      ),
      on('GET', '/api/read', async (ws, { query, res }) => {
        const filename = filenameParam(new URLSearchParams(query));
        const chunk = await files.read(ws, filename);
        await sendJsonStreamed(res, 200, { filename, path: chunk.path, size: chunk.size, ...encodeContent(chunk.content) });
      }),
      on('GET', '/api/read-partial', async (ws, { query, res }) => {
        const q = new URLSearchParams(query);
        const filename = filenameParam(q);
        const offset = intParam(q, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
        const limit = Math.min(intParam(q, 'limit', DEFAULT_PARTIAL_BYTES, 0, Number.MAX_SAFE_INTEGER), files.maxReadBytes);
        const chunk = await files.read(ws, filename, offset, limit);
        const length = chunk.content.length;
        await sendJsonStreamed(res, 200, {
          filename,
          path: chunk.path,
          offset,
          length,
          total_size: chunk.size,
          has_more: offset + length < chunk.size,
          ...encodeContent(chunk.content),
        });
      }),
    );
    for (const path of ['/execute-async', '/execute-async/status', '/execute/worker']) {
      for (const method of ['GET', 'POST'] as const) {
        routes.push({
          method,
          path: prefix + path,
          handle: () => {
            throw new DeprecatedEndpointError(path);
          },
        });
      }
    }
    const gone = (socket: WebSocket): void => socket.close(CLOSE_NOT_FOUND, 'workspace ended');
    upgrades.push(
      {
        path: `${prefix}/ws/workspace`,
        check: async (ctx) => void (await resolve(ctx)),
        accept: (socket, ctx) => void resolve(ctx).then((ws) => acceptEventStream(socket, ws, ctx.query, ctx.req.socket, options), () => gone(socket)),
      },
      {
        path: `${prefix}/ws/workspace/terminal`,
        check: async (ctx) => void (await resolve(ctx)),
        accept: (socket, ctx) => void resolve(ctx).then((ws) => acceptTerminal(socket, ws, ctx.req.socket, options), () => gone(socket)),
      },
    );
  }
  return { name: 'workspace', errors: poolErrorFormat, routes, upgrades };
}
