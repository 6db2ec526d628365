/**
 * POST /images through a gateway (docs/images.md, On a cluster): a warm-up spread over the nodes
 * its images' acquires are placed on (warmupPlan.ts), in two rounds:
 *
 * 1. check: the body is checked here as a node checks it (the same schema, the same reference
 *    grammar, plus `nodes`), then every node given a part checks its part (POST /images/check:
 *    may it pull them?) and starts nothing. Any refusal is the answer, relayed as the node gave
 *    it, and nothing starts on any node. A node that takes no connection is left out and the
 *    warm-up placed again without it.
 * 2. warm: each node is sent its part (its own POST /images); the answer is 202 with each part as
 *    its node answered it, with the node and the placement rule that chose it. A node lost between
 *    the two rounds answers for its parts as `failed` (`node_unreachable`); the others go on.
 *
 * Pulls and warm-ups then go on on the nodes; GET /images through a gateway shows them all.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody } from '../../http/body';
import { sendJson } from '../../http/httpJson';
import { compileCheck } from '../../http/schemaCheck';
import { CLUSTER_WARMUP_BODY } from '../../api/images/imageContract';
import { parseImageRef } from '../../core/images/imageRef';
import type { WarmupView } from '../../core/images/imageWarmups';
import { NoNodesError } from '../clusterErrors';
import type { Membership, Member } from './membership';
import { forwardedHeaders, relay } from './nodeForwarder';
import { askNode, firstRelayed, type AskDeps, type NodeAnswer } from './nodeAsk';
import { planWarmups, type WarmupPart } from './warmupPlan';
import type { UnseenAcquires } from './unseenAcquires';
import type { ImageTier } from './imagePlacement';

export interface WarmupDeps extends AskDeps {
  membership: Membership;
  unseen: UnseenAcquires;
  maxBodyBytes: number;
}

/** A part of a warm-up as its node answered it, with where it went. */
export type PlacedWarmupView = WarmupView & { node: string; placement: ImageTier | null };

const clusterWarmupCheck = compileCheck(CLUSTER_WARMUP_BODY);

/** The parts by node, each node's in the order of the warm-up. */
function byNode(parts: readonly WarmupPart[]): Map<string, WarmupPart[]> {
  const batches = new Map<string, WarmupPart[]>();
  for (const part of parts) {
    let batch = batches.get(part.nodeId);
    if (!batch) batches.set(part.nodeId, (batch = []));
    batch.push(part);
  }
  return batches;
}

export async function serveWarmups(req: IncomingMessage, res: ServerResponse, deps: WarmupDeps): Promise<void> {
  const { images } = clusterWarmupCheck(await readJsonBody(req, deps.maxBodyBytes));
  const asks = images.map((i) => ({ image: parseImageRef(i.image).canonical, sessions: i.sessions ?? 1, nodes: i.nodes ?? 1 }));
  const headers = (): Record<string, string | string[]> => {
    const h = forwardedHeaders(req.headers);
    delete h['content-length'];
    h['content-type'] = 'application/json';
    return h;
  };
  const post = (member: Member, path: string, batch: readonly WarmupPart[], okStatus: number): Promise<NodeAnswer> =>
    askNode(member, { method: 'POST', path, headers: headers(), body: JSON.stringify({ images: batch.map((p) => ({ image: p.image, sessions: p.sessions })) }) }, deps, okStatus);

  const gone = new Set<string>();
  let batches: Map<string, WarmupPart[]>;
  let parts: WarmupPart[];
  for (;;) {
    const members = deps.membership.list().filter((m) => !gone.has(m.record.node_id));
    if (members.length === 0) throw new NoNodesError(gone.size === 0 ? 'is registered' : 'answers (every node refused the call)');
    const inFlight = (id: string): number => deps.unseen.count(id, deps.membership.get(id)?.seenAtMs ?? 0);
    parts = planWarmups(asks, members.map((m) => m.record), gone, inFlight);
    batches = byNode(parts);
    const targets = [...batches.keys()].map((id) => deps.membership.get(id)!);
    const checks = await Promise.all(targets.map((m) => post(m, '/images/check', batches.get(m.record.node_id)!, 200)));
    const refused = firstRelayed(checks);
    if (refused) return relay(refused, res);
    const lost = targets.filter((_, i) => checks[i].kind === 'gone');
    if (lost.length === 0) break;
    for (const m of lost) gone.add(m.record.node_id);
  }

  const views = new Map<WarmupPart, PlacedWarmupView>();
  await Promise.all(
    [...batches].map(async ([nodeId, batch]) => {
      const member = deps.membership.get(nodeId);
      const answer: NodeAnswer = member ? await post(member, '/images', batch, 202) : { kind: 'gone' };
      const failure = await failureOf(answer, nodeId);
      batch.forEach((part, i) => {
        const view = answer.kind === 'ok' ? (answer.json as { images: WarmupView[] }).images[i] : { image: part.image, sessions: part.sessions, state: 'failed' as const, error: failure, askedAtMs: Date.now() };
        views.set(part, { ...view, node: nodeId, placement: part.tier });
      });
    }),
  );
  sendJson(res, 202, { images: parts.map((p) => views.get(p)!) });
}

/** Why a node's part of the warm-up did not start, from its answer (null when it started). */
async function failureOf(answer: NodeAnswer, nodeId: string): Promise<{ code: string; detail: string } | null> {
  if (answer.kind === 'ok') return null;
  if (answer.kind === 'gone') return { code: 'node_unreachable', detail: `Node '${nodeId}' took no connection: its part of the warm-up did not start` };
  const text = await answer.answer.body.text();
  try {
    const { code, detail } = JSON.parse(text) as { code?: unknown; detail?: unknown };
    if (typeof code === 'string' && typeof detail === 'string') return { code, detail };
  } catch {
    // Not the pool format: its status and text say what there is.
  }
  return { code: 'node_error', detail: `Node '${nodeId}' answered ${answer.answer.statusCode}: ${text.slice(0, 200)}` };
}
