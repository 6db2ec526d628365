/**
 * The id a call is routed by, read from its path: the segment after a prefix whose ids nodes mint
 * (a pool session, a per-sandbox API's sandbox, a lifecycle sandbox). Calls without one go to any
 * node (acquires are placed: gatewayAcquire.ts).
 */
import { ownerOfId, type IdOwner } from '../clusterIds';

/** Path prefixes followed by an id a node minted. */
const ID_PREFIXES = ['/session/', '/sandboxes/', '/v1/sandboxes/'];

export interface RoutedId extends IdOwner {
  id: string;
}

export function routedIdOf(pathname: string): RoutedId | null {
  for (const prefix of ID_PREFIXES) {
    if (!pathname.startsWith(prefix)) continue;
    const end = pathname.indexOf('/', prefix.length);
    let id: string;
    try {
      id = decodeURIComponent(pathname.slice(prefix.length, end === -1 ? undefined : end));
    } catch {
      return null;
    }
    const owner = ownerOfId(id);
    return owner ? { id, ...owner } : null;
  }
  return null;
}
