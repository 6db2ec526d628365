/**
 * How ids name their node: `<node id>.<incarnation>.<random>`. A node id has no '.' (NODE_ID_PATTERN)
 * and an incarnation is hex, so the first two dots split an id without a table. Standalone ids have
 * no dot at all and name no node. Clients treat every id as an opaque string.
 */
import { randomBytes } from 'node:crypto';

export interface IdOwner {
  nodeId: string;
  incarnation: string;
}

const NODE_ID_OF = /^([a-z0-9][a-z0-9-]{0,39})\.([0-9a-f]{8})\./;

/** A fresh incarnation: 32 random bits, hex. */
export function newIncarnation(): string {
  return randomBytes(4).toString('hex');
}

/** What every id a node mints starts with. */
export function idPrefixOf(owner: IdOwner): string {
  return `${owner.nodeId}.${owner.incarnation}.`;
}

/** The node and incarnation an id names, or null for an id no node minted. */
export function ownerOfId(id: string): IdOwner | null {
  const m = NODE_ID_OF.exec(id);
  return m ? { nodeId: m[1], incarnation: m[2] } : null;
}
