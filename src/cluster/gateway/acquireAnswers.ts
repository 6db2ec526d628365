/**
 * What a gateway reads in a node's answer to an acquire (gatewayAcquire.ts): its error code, the
 * session ids it granted, whether its 503 lets another node serve, whether the node waited less
 * than asked; and how an answer read whole is written to the client. Also the kind of an acquire:
 * what it asked for but its timeout, by which acquires are interchangeable.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ReadAnswer } from './acquireLine';

/**
 * 503 codes after which another node may serve the acquire: full, draining, or (an acquire by
 * image) no room on this node for a container or a pull of it.
 */
const MOVE_ON = new Set(['pool_exhausted', 'shutting_down', 'node_full', 'image_disk_full']);

/** Whether a node's 503 lets another node serve the acquire. */
export function movesOn(text: string): boolean {
  return MOVE_ON.has(codeOf(text));
}

/** The `code` of an answer's JSON error body; '' when it has none. */
export function codeOf(text: string): string {
  try {
    return String((JSON.parse(text) as { code?: unknown }).code);
  } catch {
    return '';
  }
}

/** An answer read whole, written to the client less its hop-by-hop headers. */
export function sendRead(res: ServerResponse, read: ReadAnswer): void {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(read.headers)) if (value !== undefined && !['connection', 'keep-alive', 'transfer-encoding'].includes(name)) headers[name] = value;
  res.writeHead(read.statusCode, headers);
  res.end(read.text);
}

/** Whether a node's 503 pool_exhausted says it waited less than `askedSeconds` (its own acquire timeout is shorter). */
export function waitedLess(text: string, askedSeconds: number): boolean {
  if (codeOf(text) !== 'pool_exhausted') return false;
  const waited = /within ([\d.e+-]+) seconds/.exec(text);
  return waited !== null && Number(waited[1]) < askedSeconds - 0.001;
}

/** The session ids a granted acquire (one) or acquire_group (several) answer names. */
export function grantedIds(text: string): string[] {
  try {
    const answer = JSON.parse(text) as { session_id?: unknown; sessions?: Array<{ session_id?: unknown }> };
    const ids = answer.sessions ? answer.sessions.map((s) => s.session_id) : [answer.session_id];
    return ids.filter((id): id is string => typeof id === 'string');
  } catch {
    return [];
  }
}

/** What one acquire asked for, but its timeout: acquires of one kind are interchangeable. */
export function kindOf(path: string, pool: string, body: Record<string, unknown>): string {
  const rest = { ...body };
  delete rest.acquire_timeout;
  return createHash('sha256').update(`${path}\0${pool}\0${JSON.stringify(rest)}`).digest('hex');
}
