/**
 * Snapshot ids: `snap-<16 hex>`, after the node's prefix on a node of a cluster (common/ids.ts), so
 * that a gateway sends every call that names a snapshot to the node that holds its layer, by the id
 * alone. A malformed id is refused before any lookup.
 */
import { randomBytes } from 'node:crypto';
import { nodeScopedId } from '../../common/ids';

/** The pattern's source (a contract's schema carries it as a string): an optional `<node>.<incarnation>.`, then `snap-<16 hex>`. */
export const SNAPSHOT_ID_SOURCE = '^(?:[a-z0-9][a-z0-9-]{0,39}\\.[0-9a-f]{8}\\.)?snap-[0-9a-f]{16}$';
export const SNAPSHOT_ID_PATTERN = new RegExp(SNAPSHOT_ID_SOURCE);
/** How refusals describe a snapshot id. */
export const SNAPSHOT_ID_SHAPE = 'snap-<16 hex>, after its node\'s prefix on a cluster';

/** A fresh snapshot id of this process: 64 random bits, unguessable and safe as a directory name. */
export function newSnapshotId(): string {
  return nodeScopedId(`snap-${randomBytes(8).toString('hex')}`);
}
