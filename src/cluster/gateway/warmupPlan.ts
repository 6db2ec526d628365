/**
 * Where a warm-up through a gateway (POST /images) warms each image (docs/images.md, On a cluster):
 * on the nodes its acquires would be placed on, so that they find it warm there.
 *
 * - An image's `nodes` nodes are chosen one after the other by the acquires' rule
 *   (imagePlacement.ts: warm, else held, else rendezvous over the nodes with room), each chosen
 *   node left out of the next choice. The first is the node an acquire of the image goes to; a
 *   spread adds the next nodes of the image's own order, where its acquires go when the first is
 *   busy or gone.
 * - Its `sessions` are split over those nodes as evenly as they go (the first chosen take one more
 *   when they do not divide); a node given none still pulls it.
 * - The containers a node is given for one image count against its room for the next images of the
 *   same warm-up: the records do not know of them yet, and a node full of one warm-up's images
 *   would close its idle pools for the next, rather than leave them to a node with room.
 *
 * An image that no node may serve (no node pulls images or runs it in a configured pool) goes to
 * the first node by rendezvous: its check answers the refusal a node gives (501, 403). Asking more
 * nodes than the cluster has that may serve it is a 400: the spread asked for cannot be made.
 */
import { BadRequestError } from '../../common/errors';
import type { NodeRecord } from '../clusterStore';
import { NoNodesError } from '../clusterErrors';
import { placeByImage, rendezvousOrder, type ImageTier } from './imagePlacement';

export interface WarmupAsk {
  /** Canonical. */
  image: string;
  /** In all, over its nodes. */
  sessions: number;
  nodes: number;
}

export interface WarmupPart {
  image: string;
  nodeId: string;
  sessions: number;
  /** The rule that chose the node (imagePlacement.ts), or null when no node may serve the image. */
  tier: ImageTier | null;
}

/** `total` split into `parts` shares as even as they go, the larger first. */
export function evenShares(total: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));
}

/** `node` with `containers` fewer free in its image room (a copy; the record itself is the membership's). */
function lessRoom(node: NodeRecord, containers: number): NodeRecord {
  if (containers === 0 || !node.images) return node;
  const room = { ...node.images.room, containers_free: Math.max(0, node.images.room.containers_free - containers) };
  return { ...node, images: { ...node.images, room } };
}

/** Each image's parts, in the order asked (an image's nodes in the order chosen). */
export function planWarmups(asks: readonly WarmupAsk[], nodes: readonly NodeRecord[], exclude: ReadonlySet<string>, inFlight: (nodeId: string) => number): WarmupPart[] {
  const given = new Map<string, number>();
  const parts: WarmupPart[] = [];
  for (const ask of asks) {
    const chosen = new Set(exclude);
    for (const sessions of evenShares(ask.sessions, ask.nodes)) {
      const records = nodes.map((n) => lessRoom(n, given.get(n.node_id) ?? 0));
      // At least one session: a node with none of the image free is not "warm" for it.
      const placed = placeByImage({ nodes: records, image: ask.image, sessions: Math.max(1, sessions), spread: false, exclude: chosen, inFlight });
      if (!placed) {
        if (chosen.size > exclude.size) throw new BadRequestError(`'nodes' asks ${ask.nodes} nodes for ${ask.image}: ${chosen.size - exclude.size} node(s) of the cluster may serve it`);
        const first = rendezvousOrder(ask.image, nodes.filter((n) => !exclude.has(n.node_id)).map((node) => ({ node })))[0];
        if (!first) throw new NoNodesError('answers');
        parts.push({ image: ask.image, nodeId: first.node.node_id, sessions, tier: null });
        break;
      }
      const nodeId = placed.node.node_id;
      chosen.add(nodeId);
      const perContainer = placed.node.images?.room.sessions_per_container ?? 0;
      if (placed.tier !== 'warm' && perContainer > 0) given.set(nodeId, (given.get(nodeId) ?? 0) + Math.ceil(sessions / perContainer));
      parts.push({ image: ask.image, nodeId, sessions, tier: placed.tier });
    }
  }
  return parts;
}
