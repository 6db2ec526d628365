/**
 * The parts of OpenSandbox's APIs the broker does not serve answer 501 in OpenSandbox's envelope,
 * naming what is missing: the egress sidecar's credential vault and its policy's other methods
 * (the SDK asks every sandbox for the egress port's endpoint, so that endpoint exists and leads here). The SDK's create-latency telemetry (POST /v1/metrics/events) is taken and dropped.
 */
import type { SandboxDirectory } from '../../core/sandbox/sandboxDirectory';
import { NotImplementedError } from '../../common/errors';
import type { Route, Router } from '../../http/router';
import { apiErrors, served, type RouteContract } from '../../http/contract';
import { EGRESS_ROUTES, LIFECYCLE_CONTRACT } from './lifecycleContract';
import { egressPolicyRoutes } from './egressPolicy';

const EGRESS = "the egress sidecar's credential vault (and its policy's other methods) is not served by this broker";

/** `sandboxes`: where an id under the route is looked up (unknown: its 404) before the 501. */
function unserved(contract: RouteContract, why: string, sandboxes?: { resolve(id: string): unknown }): Route {
  const { method, path } = contract;
  return served(contract, ({ params }) => {
    // An unknown sandbox is a 404 first: a client learns of a wrong id before it learns of a missing feature.
    if (sandboxes && params.id !== undefined) sandboxes.resolve(params.id);
    throw new NotImplementedError(`${method} ${path.replace(':id', '{sandboxId}')}: ${why}`);
  });
}

/** The SDK's create-latency telemetry: taken and dropped. */
export function unservedLifecycleRoutes(): Route[] {
  return [served(LIFECYCLE_CONTRACT.routes.metricsEvents, ({ res }) => void res.writeHead(204).end())];
}

/** `/sandboxes/{id}/egress/...`: where the egress port's endpoint leads. Its policy is served (egressPolicy.ts), the rest 501. */
export function egressRouter(sandboxes: SandboxDirectory): Router {
  return {
    name: 'egress',
    ...apiErrors(LIFECYCLE_CONTRACT),
    routes: [...egressPolicyRoutes(sandboxes), ...EGRESS_ROUTES.map((contract) => unserved(contract, EGRESS, sandboxes))],
  };
}
