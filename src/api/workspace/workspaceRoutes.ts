/**
 * The workspace API (shared PTY workspaces): a thin router over core/workspace, each route served
 * from its contract (workspaceContract.ts). Every route exists twice: on the root paths for the
 * default workspace, and under /workspaces/{id} for named ones.
 */
import type { RouteContext, Route, Router, UpgradeRoute } from '../../http/router';
import type { Workspaces } from '../../core/workspace/workspaces';
import type { WorkspaceFiles } from '../../core/workspace/workspaceFiles';
import type { Workspace } from '../../core/workspace/workspace';
import { brokerError } from '../../common/errors';
import { sendJson, sendJsonStreamed } from '../../http/httpJson';
import { clientGone } from '../../http/clientGone';
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
import { apiErrors, served, upgrade, type RouteContract } from '../../http/contract';
import { WORKSPACE_CONTRACT, WORKSPACE_ROUTES } from './workspaceContract';

/** A WebSocket whose workspace ended between the handshake's check and the socket (rare). */
const CLOSE_NOT_FOUND = 4404;

/** The workspace API's deprecated endpoints: not served, and the answer says what to use. */
class DeprecatedEndpointError extends brokerError('gone', 'deprecated_endpoint', (path: string) => `${path} is deprecated and not served: use POST /api/execute (its answer has the output so far; /ws/workspace streams the rest)`) {}

export interface WorkspaceRouterOptions extends SocketOptions {
  maxCommandBytes: number;
}

const PREFIXES = [
  { contracts: WORKSPACE_ROUTES.default, id: (): string | null => null },
  { contracts: WORKSPACE_ROUTES.named, id: (params: Readonly<Record<string, string>>): string | null => params.workspaceId },
];

export function workspaceRouter(workspaces: Workspaces, files: WorkspaceFiles, options: WorkspaceRouterOptions): Router {
  const R = WORKSPACE_CONTRACT.routes;
  const routes: Route[] = [
    served(R.create, async ({ res }) => {
      // A client that left while its workspace was made (queued for a slot, or starting) never learns
      // its id, and a workspace has no idle reclaim: leave the queue, or end what was made.
      const ws = await workspaces.create(undefined, clientGone(res));
      if (res.destroyed) return void (await workspaces.end(ws.id));
      sendJson(res, 201, { workspace_id: ws.id, workdir: ws.workdir });
    }),
    served(R.list, ({ res }) => {
      sendJson(res, 200, workspaces.list().map((ws) => ({ workspace_id: ws.id, workdir: ws.workdir, running_job_id: ws.runningJobId })));
    }),
    served(R.end, async ({ params, res }) => {
      await workspaces.end(params.workspaceId);
      sendJson(res, 200, { workspace_id: params.workspaceId, status: 'ended' });
    }),
  ];
  const upgrades: UpgradeRoute[] = [];
  for (const { contracts: W, id } of PREFIXES) {
    const resolve = (ctx: { params: Readonly<Record<string, string>> }): Promise<Workspace> => workspaces.resolve(id(ctx.params));
    /**
     * A route whose inputs `read` checks before the workspace is resolved: the default one is made
     * on its first use, and a request refused for its input must not make it (nor lease its session).
     */
    const on = <I>(contract: RouteContract, read: (ctx: RouteContext) => I, handle: (ws: Workspace, input: I, ctx: RouteContext) => Promise<void> | void): Route =>
      served(contract, async (ctx) => {
        const input = read(ctx);
        return handle(await resolve(ctx), input, ctx);
      });
    const none = (): null => null;
    routes.push(
      on(
        W.execute,
        ({ body }) => parseWorkspaceExecute(body, options),
        async (ws, { command, waitMs }, { res }) => {
          await sendJsonStreamed(res, 200, { ...(await ws.execute(command, waitMs)) });
        },
      ),
      on(W.interrupt, none, (ws, _input, { res }) => sendJson(res, 200, { job_id: ws.interrupt() })),
      on(
        W.input,
        ({ body }) => parseInput(body),
        (ws, text, { res }) => {
          ws.input(text);
          sendJson(res, 200, { status: 'sent' });
        },
      ),
      on(
        W.logs,
        ({ query }) => {
          const q = new URLSearchParams(query);
          return { offset: intParam(q, 'offset', 0, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER), limit: intParam(q, 'limit', DEFAULT_LOG_LIMIT, 1, MAX_LOG_LIMIT) };
        },
        (ws, { offset, limit }, { res }) => {
          const from = offset < 0 ? Math.max(0, ws.events.next + offset) : offset;
        const { dropped, events } = ws.events.slice(from, limit);
          const headers = { 'X-Workspace-Log-Start': String(ws.events.start), 'X-Workspace-Log-Next': String(ws.events.next) };
          sendJson(res, 200, dropped ? [dropped, ...events] : events, headers);
        },
      ),
      on(
        W.write,
        ({ body }) => parseWrite(body),
        async (ws, { filename, content }, { res }) => {
          const path = await files.write(ws, filename, content);
          sendJson(res, 200, { filename, path, bytes_written: content.length });
        },
      ),
      on(
        W.read,
        ({ query }) => filenameParam(new URLSearchParams(query)),
        async (ws, filename, { res }) => {
          const chunk = await files.read(ws, filename);
          await sendJsonStreamed(res, 200, { filename, path: chunk.path, size: chunk.size, ...encodeContent(chunk.content) });
        },
      ),
      on(
        W.readPartial,
        ({ query }) => {
          const q = new URLSearchParams(query);
          const filename = filenameParam(q);
          const offset = intParam(q, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
          return { filename, offset, limit: Math.min(intParam(q, 'limit', DEFAULT_PARTIAL_BYTES, 0, Number.MAX_SAFE_INTEGER), files.maxReadBytes) };
        },
        async (ws, { filename, offset, limit }, { res }) => {
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
        },
      ),
      // The error names the path as the earlier API had it, without the workspace's prefix.
      ...W.deprecated.map((contract) =>
        served(contract, () => {
          throw new DeprecatedEndpointError(contract.path.slice(contract.path.indexOf('/execute')));
        }),
      ),
    );
    const gone = (socket: WebSocket): void => socket.close(CLOSE_NOT_FOUND, 'workspace ended');
    upgrades.push(
      upgrade(W.events, {
        check: async (ctx) => void (await resolve(ctx)),
        accept: (socket, ctx) => void resolve(ctx).then((ws) => acceptEventStream(socket, ws, ctx.query, ctx.req.socket, options), () => gone(socket)),
      }),
      upgrade(W.terminal, {
        check: async (ctx) => void (await resolve(ctx)),
        accept: (socket, ctx) => void resolve(ctx).then((ws) => acceptTerminal(socket, ws, ctx.req.socket, options), () => gone(socket)),
      }),
    );
  }
  return { name: 'workspace', ...apiErrors(WORKSPACE_CONTRACT), routes, upgrades };
}
