/**
 * `/sandboxes/{id}/egress/policy` (egressContract.ts): the egress a sandbox has, in the sidecar's
 * PolicyStatusResponse. A backend without networks of its own (local) gives its sessions the host's:
 * allow-all.
 */
import { NotImplementedError } from '../../common/errors';
import { compileCheck } from '../../http/schemaCheck';
import { sendJson } from '../../http/httpJson';
import { served } from '../../http/contract';
import type { Route } from '../../http/router';
import type { SandboxDirectory } from '../../core/sandbox/sandboxDirectory';
import type { EgressPolicy } from '../../core/ports/sessionNetworks';
import { EGRESS_POLICY_ROUTES } from './egressContract';

const R = EGRESS_POLICY_ROUTES;

async function inForce(sandboxes: SandboxDirectory, id: string): Promise<{ policy: EgressPolicy; own: boolean }> {
  const handle = sandboxes.resolve(id);
  return handle.backend.networks ? handle.backend.networks.current(handle.container, handle.slotId) : { policy: 'full', own: false };
}

function answer(state: { policy: EgressPolicy; own: boolean }): object {
  const defaultAction = state.policy === 'none' ? 'deny' : 'allow';
  return { status: 'ok', mode: `${defaultAction}_all`, enforcementMode: state.own ? 'netns' : 'container', policy: { defaultAction, egress: [] } };
}

export function egressPolicyRoutes(sandboxes: SandboxDirectory): Route[] {
  const rules = compileCheck(R.patch.body.schema as never) as (body: unknown) => { action: 'allow' | 'deny'; target: string }[];
  const targets = compileCheck(R.delete.body.schema as never) as (body: unknown) => string[];
  return [
    served(R.get, async ({ params, res }) => sendJson(res, 200, answer(await inForce(sandboxes, params.id)))),
    served(R.patch, async ({ params, body, res }) => {
      const incoming = rules(body);
      const state = await inForce(sandboxes, params.id);
      const action = state.policy === 'none' ? 'deny' : 'allow';
      const differing = incoming.filter((r) => r.action !== action);
      if (differing.length > 0) throw new NotImplementedError(`egress rules by domain (${differing.map((r) => `${r.action} ${r.target}`).join(', ')}) are not served by this broker: its egress is all (allow) or nothing (deny)`);
      sendJson(res, 200, answer(state));
    }),
    served(R.delete, async ({ params, body, res }) => {
      targets(body);
      sendJson(res, 200, answer(await inForce(sandboxes, params.id)));
    }),
  ];
}
