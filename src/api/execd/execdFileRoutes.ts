/**
 * execd's files and directories (OpenSandbox execd's Filesystem routes) under
 * `/sandboxes/{id}/execd`: the id resolves through the SandboxDirectory (any live sandbox with a
 * shell: a pool lease, a workspace, a lifecycle sandbox), the work is ExecdFiles' (core/execd),
 * errors take OpenSandbox's `{code, message}` envelope.
 */
import type { ServerResponse } from 'node:http';
import { BadRequestError } from '../../common/errors';
import type { ExecdFiles } from '../../core/execd/execdFiles';
import { offsetLimitRange, parseRange } from '../../core/execd/execdPaths';
import type { SandboxHandle } from '../../core/sandbox/sandboxHandle';
import type { SandboxDirectory } from '../../core/sandbox/sandboxDirectory';
import { sendJson } from '../../http/httpJson';
import type { Route, RouteContext, Router } from '../../http/router';
import { apiErrors, served, type RouteContract } from '../../http/contract';
import { depthParam, fileInfo, sendEmpty } from './execdViews';
import { parsePermissions, parseRenames, parseReplacements } from './execdInput';
import { EXECD_FILES_CONTRACT } from './execdContract';
import { receiveUploads } from './execdUpload';

const R = EXECD_FILES_CONTRACT.routes;

function one(query: URLSearchParams, name: string): string {
  const value = query.get(name);
  if (value === null || value === '') throw new BadRequestError(`query parameter '${name}' is required`);
  return value;
}

/** RFC 6266: an ASCII fallback and the UTF-8 name. */
function attachment(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1) || 'download';
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

async function sendDownload(res: ServerResponse, files: ExecdFiles, handle: SandboxHandle, ctx: RouteContext, query: URLSearchParams): Promise<void> {
  const range = ctx.req.headers.range;
  const [offset, limit] = [query.get('offset'), query.get('limit')];
  if (range !== undefined && (offset !== null || limit !== null)) throw new BadRequestError('send a Range header or offset/limit, not both');
  const download = await files.download(handle, one(query, 'path'), (size) => offsetLimitRange(offset, limit, size) ?? parseRange(range, size));
  const { offset: from, length, partial } = download.range;
  const headers: Record<string, string> = {
    'Content-Type': 'application/octet-stream',
    'Content-Length': String(length),
    'Content-Disposition': attachment(download.path),
    'Accept-Ranges': 'bytes',
  };
  if (partial) headers['Content-Range'] = `bytes ${from}-${from + length - 1}/${download.size}`;
  res.writeHead(partial ? 206 : 200, headers);
  const body = download.body;
  res.on('close', () => (body as { destroy?: () => void }).destroy?.()); // a client gone mid-download stops the read
  body.on('error', () => res.destroy()); // a read that fails mid-body: the client sees a short body, never a wrong one
  body.pipe(res);
}

export function execdFileRouter(directory: SandboxDirectory, files: ExecdFiles): Router {
  const route = (contract: RouteContract, serve: (handle: SandboxHandle, ctx: RouteContext, query: URLSearchParams) => Promise<void>): Route =>
    served(contract, (ctx) => serve(directory.resolve(ctx.params.id), ctx, new URLSearchParams(ctx.query)));
  /** A route whose answer is an empty 200 once `work` is done. */
  const empty = (contract: RouteContract, work: (handle: SandboxHandle, ctx: RouteContext, query: URLSearchParams) => Promise<void>): Route =>
    route(contract, async (h, ctx, q) => {
      await work(h, ctx, q);
      sendEmpty(ctx.res);
    });
  return {
    name: 'execd files',
    ...apiErrors(EXECD_FILES_CONTRACT),
    routes: [
      route(R.info, async (h, { res }, q) => {
        const infos = await files.info(h, q.getAll('path'));
        sendJson(res, 200, Object.fromEntries([...infos].map(([path, entry]) => [path, fileInfo(entry)])));
      }),
      empty(R.removeFiles, (h, _ctx, q) => files.removeFiles(h, q.getAll('path'))),
      empty(R.permissions, (h, { body }) => files.setPermissions(h, parsePermissions(body))),
      empty(R.move, (h, { body }) => files.move(h, parseRenames(body))),
      route(R.search, async (h, { res }, q) => {
        sendJson(res, 200, (await files.search(h, one(q, 'path'), q.get('pattern') || '**')).map(fileInfo));
      }),
      route(R.replace, async (h, { res, body }, q) => {
        const counts = await files.replace(h, parseReplacements(body));
        if (q.get('verbose') !== 'true') return sendEmpty(res);
        sendJson(res, 200, Object.fromEntries([...counts].map(([path, replacedCount]) => [path, { replacedCount }])));
      }),
      empty(R.upload, async (h, { req }) => void (await receiveUploads(req, files, h))),
      route(R.download, (h, ctx, q) => sendDownload(ctx.res, files, h, ctx, q)),
      route(R.list, async (h, { res }, q) => {
        sendJson(res, 200, (await files.list(h, one(q, 'path'), depthParam(q.get('depth')))).map(fileInfo));
      }),
      empty(R.makeDirectories, (h, { body }) => files.makeDirectories(h, parsePermissions(body))),
      empty(R.removeDirectories, (h, _ctx, q) => files.removeDirectories(h, q.getAll('path'))),
    ],
  };
}
