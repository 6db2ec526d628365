/**
 * A list through a gateway (GET /workspaces, GET /v1/sandboxes, GET /images, GET /snapshots,
 * GET /v1/snapshots): every node is asked, and the answers are merged into one in the shape a
 * standalone broker gives.
 *
 * - Workspaces: every node's, nodes in the order of their ids.
 * - Images: one entry per image over every node, with each node's own view of it (imageReports.ts).
 * - Lifecycle sandboxes and snapshots: the client's filters go to every node as they came; each
 *   node's matches are read whole (pages of the largest size), merged by creation time (as one
 *   broker orders them), and the page asked for is cut from the merge, with its pagination over the
 *   whole cluster.
 * - Snapshots (GET /snapshots): every node's, merged by creation time, with the budgets and the bytes
 *   used summed (each node holds its own snapshots within its own budget).
 *
 * A node that takes no connection is left out (what it held is lost with it); a node that answers
 * anything but 200 (a bad filter is every node's 400) has its answer relayed as it came.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { sendJson } from '../../http/httpJson';
import { splitTarget } from '../../http/routeTable';
import { SANDBOX_STATES } from '../../core/lifecycle/sandboxRecord';
import { MAX_PAGE_SIZE, parseListQuery, parseSnapshotListQuery } from '../../api/lifecycle/lifecycleInput';
import { SNAPSHOT_STATES } from '../../api/lifecycle/lifecycleSnapshotContract';
import { pagedList } from '../../api/lifecycle/lifecycleViews';
import { NoNodesError } from '../clusterErrors';
import type { Member } from './membership';
import { forwardedHeaders, relay } from './nodeForwarder';
import { askNode, firstRelayed, type AskDeps, type NodeAnswer } from './nodeAsk';
import type { ListKind } from './gatewayRoutes';
import { mergeImageReports } from './imageReports';
import type { ImagesReport } from '../../core/images/imageViews';

interface LifecyclePage {
  items: Array<{ createdAt: string }>;
  pagination: { totalItems: number };
}

export async function serveList(kind: ListKind, members: Member[], req: IncomingMessage, res: ServerResponse, deps: AskDeps): Promise<void> {
  if (members.length === 0) throw new NoNodesError('is registered');
  const nodes = [...members].sort((a, b) => (a.record.node_id < b.record.node_id ? -1 : 1));
  const ask = (member: Member, path: string): Promise<NodeAnswer> => askNode(member, { method: 'GET', path, headers: forwardedHeaders(req.headers), body: null }, deps);
  if (kind === 'images') {
    const reports = await Promise.all(nodes.map((m) => ask(m, req.url ?? '/images')));
    const failed = firstRelayed(reports);
    if (failed) return relay(failed, res);
    const perNode = reports.flatMap((r, i) => (r.kind === 'ok' ? [{ nodeId: nodes[i].record.node_id, report: r.json as ImagesReport }] : []));
    return sendJson(res, 200, mergeImageReports(perNode));
  }
  if (kind === 'workspaces') {
    const lists = await Promise.all(nodes.map((m) => ask(m, req.url ?? '/workspaces')));
    const failed = firstRelayed(lists);
    if (failed) return relay(failed, res);
    return sendJson(res, 200, lists.flatMap((l) => (l.kind === 'ok' ? (l.json as unknown[]) : [])));
  }
  if (kind === 'snapshots') {
    const lists = await Promise.all(nodes.map((m) => ask(m, req.url ?? '/snapshots')));
    const failed = firstRelayed(lists);
    if (failed) return relay(failed, res);
    return sendJson(res, 200, mergeSnapshots(lists.flatMap((l) => (l.kind === 'ok' ? [l.json as SnapshotList] : []))));
  }
  const { path, query } = splitTarget(req.url ?? '/v1/sandboxes');
  // A bad filter is answered here, as a node would: the same check, the same 400.
  const { page, pageSize } = kind === 'lifecycle' ? parseListQuery(query, SANDBOX_STATES) : parseSnapshotListQuery(query, SNAPSHOT_STATES);
  const perNode = await Promise.all(nodes.map((m) => allPages(m, path, query, ask)));
  const failed = firstRelayed(perNode.map((l) => (Array.isArray(l) ? { kind: 'gone' as const } : l)));
  if (failed) return relay(failed, res);
  // Stable: equal times keep the nodes' order, and each node's own order.
  const merged = (perNode as LifecyclePage['items'][]).flat().sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
  const start = (page - 1) * pageSize;
  sendJson(res, 200, pagedList(merged.slice(start, start + pageSize), merged.length, page, pageSize));
}

interface SnapshotList {
  budget_bytes: number;
  used_bytes: number;
  snapshots: Array<{ created_at_ms: number }>;
}

/** The nodes' GET /snapshots as one: oldest first (stable: equal times keep the nodes' order), the budgets summed. */
function mergeSnapshots(lists: readonly SnapshotList[]): SnapshotList {
  return {
    budget_bytes: lists.reduce((sum, l) => sum + l.budget_bytes, 0),
    used_bytes: lists.reduce((sum, l) => sum + l.used_bytes, 0),
    snapshots: lists.flatMap((l) => l.snapshots).sort((a, b) => a.created_at_ms - b.created_at_ms),
  };
}

/** Every item a node's list matches, page by page of the largest size. */
async function allPages(member: Member, path: string, query: string, ask: (m: Member, path: string) => Promise<NodeAnswer>): Promise<LifecyclePage['items'] | { kind: 'answer'; answer: Dispatcher.ResponseData }> {
  const items: LifecyclePage['items'] = [];
  for (let page = 1; ; page++) {
    const params = new URLSearchParams(query);
    params.set('page', String(page));
    params.set('pageSize', String(MAX_PAGE_SIZE));
    const list = await ask(member, `${path}?${params.toString()}`);
    if (list.kind === 'gone') return items;
    if (list.kind === 'answer') return list;
    const body = list.json as LifecyclePage;
    items.push(...body.items);
    if (body.items.length === 0 || items.length >= body.pagination.totalItems) return items;
  }
}
