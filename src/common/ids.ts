import { randomBytes } from 'node:crypto';

/** A lease id: 128 random bits, hex, so it is unguessable and safe in a path (/tmp/s/<id>/). */
export function newSessionId(): string {
  return randomBytes(16).toString('hex');
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
