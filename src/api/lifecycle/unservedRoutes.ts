/**
 * The parts of OpenSandbox's APIs the broker does not serve answer 501 in OpenSandbox's envelope,
 * naming what is missing: snapshots (lifecycle API) and the egress sidecar's policy and credential
 * vault (the SDK asks every sandbox for the egress port's endpoint, so that endpoint exists and
 * leads here). The SDK's create-latency telemetry (POST /v1/metrics/events) is taken and dropped.
 */
import type { SandboxDirectory } from '../../core/sandbox/sandboxHandle';
import { NotImplementedError } from '../../common/errors';
import { openSandboxErrorFormat } from '../../http/errorFormats';
import type { HttpMethod, Route, Router } from '../../http/router';

const SNAPSHOTS = 'snapshots are not served by this broker: a sandbox lives until it is deleted or expires';
const EGRESS = 'the egress sidecar (network policy, credential vault) is not served by this broker: sandboxes get the network of their pool or BROKER_NETWORK_MODE';

function unserved(method: HttpMethod, path: string, why: string, sandboxes?: SandboxDirectory): Route {
  return {
    method,
    path,
    handle({ params }) {
      // An unknown sandbox is a 404 first: a client learns of a wrong id before it learns of a missing feature.
      if (sandboxes && params.id !== undefined) sandboxes.resolve(params.id);
      throw new NotImplementedError(`${method} ${path.replace(':id', '{sandboxId}')}: ${why}`);
    },
  };
}

export function unservedLifecycleRoutes(): Route[] {
  return [
    unserved('POST', '/v1/sandboxes/:id/snapshots', SNAPSHOTS),
    unserved('GET', '/v1/snapshots', SNAPSHOTS),
    unserved('GET', '/v1/snapshots/:snapshotId', SNAPSHOTS),
    unserved('DELETE', '/v1/snapshots/:snapshotId', SNAPSHOTS),
    {
      method: 'POST',
      path: '/v1/metrics/events',
      handle({ res }) {
        res.writeHead(204).end();
      },
    },
  ];
}

const EGRESS_PATHS = ['policy', 'credential-vault', 'credential-vault/credentials', 'credential-vault/credentials/:name', 'credential-vault/bindings', 'credential-vault/bindings/:name'];
const EGRESS_METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** `/sandboxes/{id}/egress/...`: where the egress port's endpoint leads. */
export function egressRouter(sandboxes: SandboxDirectory): Router {
  return {
    name: 'egress',
    errors: openSandboxErrorFormat,
    routes: EGRESS_PATHS.flatMap((p) => EGRESS_METHODS.map((m) => unserved(m, `/sandboxes/:id/egress/${p}`, EGRESS, sandboxes))),
  };
}
