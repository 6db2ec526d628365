/**
 * The engine's words for a failed pull, sorted into the port's reasons (core/ports/imageStore.ts).
 * Docker answers a pull's failure as an HTTP error or as an `error` line of its progress stream, in
 * the registry's and Go's words; these are the ones Docker 20.10 and later say, with the reference
 * registry and Docker Hub.
 */
import { PullFailure, type PullFailureReason } from '../../../core/ports/imageStore';

const REASONS: ReadonlyArray<[RegExp, PullFailureReason]> = [
  // "unauthorized: authentication required", "no basic auth credentials", "denied: requested access
  // to the resource is denied" (Docker Hub's answer for a repository that is not there, too).
  [/unauthorized|authentication required|no basic auth credentials|denied|401 Unauthorized|403 Forbidden/i, 'denied'],
  // "manifest for x not found: manifest unknown", "repository x not found: name unknown".
  [/manifest unknown|name unknown|not found|does not exist|404 Not Found/i, 'not_found'],
  [/connection refused|no such host|i\/o timeout|timeout|timed out|connection reset|EOF|network is unreachable|no route to host|server misbehaving|TLS handshake|dial tcp|503 Service Unavailable|502 Bad Gateway/i, 'unreachable'],
];

export function pullFailure(message: string): PullFailure {
  for (const [pattern, reason] of REASONS) if (pattern.test(message)) return new PullFailure(reason, message);
  return new PullFailure('failed', message);
}
