/**
 * Calls that name a snapshot in their body, through a gateway: an acquire from one (`{"snapshot":
 * id}`, POST /session/acquire and /session/acquire_group) and a lifecycle create that restores one
 * (`snapshotId`). A snapshot's layer lives on its node alone, and its id names that node
 * (clusterIds.ts), so such a call goes to that node as an id's call does, never placed: the node
 * answers as any full node does when it has no room. When that node is gone the call answers 410
 * (`node_lost`), the snapshot gone with it. The routes that name a snapshot in their path are routed
 * by their contract (`id`), and the lists are merged (gatewayLists.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBodyBytes } from '../../http/body';
import { ownerOfId, type IdOwner } from '../clusterIds';
import type { Handle } from './gatewayRoutes';

/** The body's field that names a snapshot: an acquire's, a lifecycle create's. */
export type SnapshotField = 'snapshot' | 'snapshotId';

/** A snapshot's id and the node it names. */
export type NamedSnapshot = IdOwner & { id: string };

/** Sends a call, its body read whole, to the node `routed` names (410 when that node is gone). */
export type ToSnapshotNode = (routed: NamedSnapshot, req: IncomingMessage, res: ServerResponse, body: Buffer) => Promise<void>;

/**
 * A placed route's handler (an acquire, a create): its body read whole (bounded by
 * BROKER_MAX_BODY_BYTES); a body that names a snapshot in `field` goes to the snapshot's node, any
 * other to `placed`.
 */
export function bySnapshot(field: SnapshotField, maxBodyBytes: number, toNode: ToSnapshotNode, placed: (req: IncomingMessage, res: ServerResponse, body: Buffer) => Promise<void>): Handle {
  return async ({ req, res }) => {
    const body = await readBodyBytes(req, maxBodyBytes);
    const routed = snapshotNamed(body, field);
    return routed ? toNode(routed, req, res, body) : placed(req, res, body);
  };
}

/**
 * The snapshot a body names in `field`, and its node; null when it names none that a node minted
 * (no JSON, no such field, a standalone id): then the call goes on as it would without it, and a
 * node's check answers a bad one.
 */
export function snapshotNamed(body: Buffer, field: SnapshotField): NamedSnapshot | null {
  // Most acquires and creates name no snapshot: a byte search spares them a second parse.
  if (body.length === 0 || !body.includes(field)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
  const id = (parsed as Record<string, unknown>)[field];
  if (typeof id !== 'string') return null;
  const owner = ownerOfId(id);
  return owner ? { id, ...owner } : null;
}
