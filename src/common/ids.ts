import { randomBytes } from 'node:crypto';

/**
 * What every id this process mints starts with: '' standalone; `<node id>.<incarnation>.` on a node
 * of a cluster, so that any gateway routes a call by its id alone (cluster/clusterIds.ts reads it back).
 * One per process: a node is a process.
 */
let idPrefix = '';

export function setIdPrefix(prefix: string): void {
  idPrefix = prefix;
}

/**
 * An id of this process from its own random part: the part alone standalone, as ids always were;
 * after the node's prefix on a node. Every id a client gets is minted through it (sessions, lifecycle
 * sandboxes, workspaces, sandbox groups, tasks), so a gateway routes any call by its id alone.
 */
export function nodeScopedId(random: string): string {
  return idPrefix + random;
}

/** A lease id: 128 random bits, hex, so it is unguessable and safe in a path (/tmp/s/<id>/); a node's prefix before them. */
export function newSessionId(): string {
  return nodeScopedId(randomBytes(16).toString('hex'));
}

export const SESSION_ID_PATTERN = /^[0-9a-f]{32}$/;

/**
 * Per-command framing nonce. 64 random bits: output cannot fake a marker it cannot know. Drawn from a
 * pre-filled pool because one randomBytes() call per command is measurable on the hot path.
 */
let noncePool = Buffer.alloc(0);
let nonceOffset = 0;
export function newNonce(): string {
  if (nonceOffset + 8 > noncePool.length) {
    noncePool = randomBytes(8 * 512);
    nonceOffset = 0;
  }
  const hex = noncePool.toString('hex', nonceOffset, nonceOffset + 8);
  nonceOffset += 8;
  return hex;
}
