/**
 * Where an acquire that names an image goes (docs/images.md, On a cluster), from the nodes' records:
 *
 * 1. warm: a node with free sessions of the image for the whole acquire (its pool made on demand,
 *    or a configured pool that runs it): the one with the most, so a burst spreads over them;
 * 2. held: else a node that holds the image (a pool of it, its disk, or its Bloom filter says it may)
 *    and has room to start the containers the acquire needs: no pull, one container start;
 * 3. cold: else a node with room, chosen by rendezvous hashing of the image over those nodes: the
 *    node whose hash of (image, node id) is highest. Every gateway picks the same node for an image
 *    from the same membership, so an image's first acquires and its pulls stay on one node while
 *    it has room, and move to the next in the image's own order when it has not (or dies): the
 *    pulls of an image stay on as few nodes as its demand needs, while different images spread
 *    evenly over the nodes. A node leaving moves only the images whose first choice it was.
 *
 * Within "held", rendezvous order again: two holders with room are equal for the acquire, and one
 * image's demand is better kept together (its pool grows where it is) than spread.
 *
 * When no node has room, the acquire waits where it will be served first: a node with a pool of the
 * image (its queue), else the first node of the image's rendezvous order; that node answers 503
 * `node_full` when it cannot make room, and the gateway moves on to the next.
 *
 * The facts are a heartbeat old: free sessions are counted less this gateway's own acquires a
 * record does not count yet (`inFlight`), and a Bloom filter may say "held" of an image the node
 * lacks (then it pulls: the acquire is served, slower). A node that pulls no images and runs no
 * configured pool of the image is never chosen (it would answer 501).
 */
import { createHash } from 'node:crypto';
import type { NodeRecord } from '../clusterStore';
import { imageOnNode } from '../node/imageSummary';
import { freeSessions } from './placement';
import { canonicalImage } from '../../core/images/imageRef';

export type ImageTier = 'warm' | 'held' | 'cold';

export interface ImagePlacementInput {
  nodes: readonly NodeRecord[];
  /** The image, canonical (core/images/imageRef.ts). */
  image: string;
  /** Sessions the acquire takes at once (an acquire_group's n). */
  sessions: number;
  /** Whether each session needs a container of its own (an acquire_group's spread). */
  spread: boolean;
  /** Nodes already tried for this acquire. */
  exclude: ReadonlySet<string>;
  /** This gateway's acquires to a node that its record does not count yet. */
  inFlight(nodeId: string): number;
}

export interface ImagePlacement {
  node: NodeRecord;
  tier: ImageTier;
  /** Whether the facts say a session is free now (else the acquire waits for a pull, a container or a queue). */
  free: boolean;
}

/** What one node's record says it can do for the acquire. */
interface NodeFit {
  node: NodeRecord;
  /** Free sessions of the image now (less the gateway's unseen acquires). */
  warm: number;
  /** A pool of the image runs there, or its disk holds it (or may: Bloom filter). */
  held: boolean;
  /** Whether it can give the acquire's sessions without waiting for others to release. */
  room: boolean;
  /** A pool of the image runs there (an acquire may wait in its queue). */
  pooled: boolean;
}

/** The rendezvous weight of `nodeId` for `image`: the first 48 bits of a SHA-256 of both (higher wins). */
export function rendezvousWeight(image: string, nodeId: string): number {
  return createHash('sha256').update(image).update('\0').update(nodeId).digest().readUIntBE(0, 6);
}

/** The nodes in `image`'s rendezvous order (highest weight first; ties, never seen in practice, by id). */
export function rendezvousOrder<T extends { node: NodeRecord }>(image: string, fits: readonly T[]): T[] {
  const weight = new Map(fits.map((f) => [f.node.node_id, rendezvousWeight(image, f.node.node_id)]));
  return [...fits].sort((a, b) => weight.get(b.node.node_id)! - weight.get(a.node.node_id)! || a.node.node_id.localeCompare(b.node.node_id));
}

function fitOf(node: NodeRecord, input: ImagePlacementInput): NodeFit | null {
  const inFlight = input.inFlight(node.node_id);
  // A configured pool that runs the image serves it first (the node's own rule).
  const configured = Object.keys(node.pools).find((name) => node.pools[name].image === input.image);
  if (configured !== undefined) {
    const warm = freeSessions(node, configured, inFlight);
    return { node, warm, held: true, room: warm >= input.sessions, pooled: true };
  }
  const images = node.images;
  if (!images?.on_demand) return null;
  const { entry, mayHold } = imageOnNode(images, input.image);
  const warm = (entry?.warm ?? 0) - inFlight;
  const containers = entry?.containers ?? 0;
  const { containers_free: free, sessions_per_container: perContainer, max_containers_per_image: ceiling } = images.room;
  const more = Math.max(0, Math.min(free, ceiling - containers));
  // A spread group needs a container per session; otherwise the free sessions and the new containers' together.
  const room = input.spread ? containers + more >= input.sessions : Math.max(0, warm) + more * perContainer >= input.sessions;
  return { node, warm, held: containers > 0 || mayHold, room, pooled: containers > 0 };
}

/** The node for an acquire of `image`, and the rule that chose it; null when no node may serve it. */
export function placeByImage(input: ImagePlacementInput): ImagePlacement | null {
  const fits: NodeFit[] = [];
  for (const node of input.nodes) {
    if (input.exclude.has(node.node_id) || node.health === 'unhealthy') continue;
    const fit = fitOf(node, input);
    if (fit) fits.push(fit);
  }
  if (fits.length === 0) return null;
  const warm = fits.filter((f) => f.warm >= input.sessions);
  if (warm.length > 0) {
    // The most free sessions; equal ones in the image's rendezvous order.
    const best = rendezvousOrder(input.image, warm).reduce((a, b) => (b.warm > a.warm ? b : a));
    return { node: best.node, tier: 'warm', free: true };
  }
  const held = fits.filter((f) => f.held && f.room);
  if (held.length > 0) return { node: rendezvousOrder(input.image, held)[0].node, tier: 'held', free: false };
  const roomy = fits.filter((f) => f.room);
  if (roomy.length > 0) return { node: rendezvousOrder(input.image, roomy)[0].node, tier: 'cold', free: false };
  // No room anywhere: the queue of a pool of the image, else the image's first node.
  const pooled = fits.filter((f) => f.pooled);
  const wait = rendezvousOrder(input.image, pooled.length > 0 ? pooled : fits)[0];
  return { node: wait.node, tier: wait.held ? 'held' : 'cold', free: false };
}

/** The image a create's body names (a lifecycle sandbox's `image.uri`), canonical; null when none (or no JSON: the node's 400). */
export function imageOfCreate(body: Buffer): string | null {
  if (body.length === 0) return null;
  try {
    const uri = (JSON.parse(body.toString('utf8')) as { image?: { uri?: unknown } } | null)?.image?.uri;
    return typeof uri === 'string' ? canonicalImage(uri) : null;
  } catch {
    return null;
  }
}
