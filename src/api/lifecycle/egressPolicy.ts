/**
 * `/sandboxes/{id}/egress/policy` (egressContract.ts): the egress a sandbox has, in the sidecar's
 * PolicyStatusResponse, and its rules changed (PATCH merges, DELETE removes by target) with the
 * sidecar's semantics (core/network/egressRules.ts). A backend without networks of its own (local)
 * gives its sessions the host's: allow-all, and no rules can be held (501).
 */
import { NotImplementedError } from '../../common/errors';
import { compileCheck } from '../../http/schemaCheck';
import { sendJson } from '../../http/httpJson';
import { served } from '../../http/contract';
import type { Route } from '../../http/router';
import type { SandboxDirectory } from '../../core/sandbox/sandboxDirectory';
import type { EgressState } from '../../core/ports/sessionNetworks';
import { mergeRules, removeRules, type EgressRule } from '../../core/network/egressRules';
import { EGRESS_POLICY_ROUTES } from './egressContract';
import { checkedRules } from './networkPolicy';

const R = EGRESS_POLICY_ROUTES;

async function inForce(sandboxes: SandboxDirectory, id: string): Promise<EgressState> {
  const handle = sandboxes.resolve(id);
  return handle.backend.networks ? handle.backend.networks.current(handle.container, handle.slotId) : { policy: 'full', rules: [], own: false };
}

/** The sandbox's session gets `rules` before its policy; where it has no network of its own, none can be held (a 501, nothing changed). */
async function change(sandboxes: SandboxDirectory, id: string, state: EgressState, rules: EgressRule[]): Promise<EgressState> {
  if (rules.length === 0 && state.rules.length === 0) return state;
  const handle = sandboxes.resolve(id);
  if (!state.own || !handle.backend.networks) throw new NotImplementedError(`egress rules: this sandbox shares its container's network (a container of its own, or sessions without networks of their own) and holds none`);
  await handle.backend.networks.change(handle.container, handle.slotId, state.policy, rules);
  return { ...state, rules };
}

function answer(state: EgressState): object {
  const defaultAction = state.policy === 'none' ? 'deny' : 'allow';
  return { status: 'ok', mode: state.rules.length > 0 ? 'enforcing' : `${defaultAction}_all`, enforcementMode: state.own ? 'netns' : 'container', policy: { defaultAction, egress: state.rules } };
}

export function egressPolicyRoutes(sandboxes: SandboxDirectory): Route[] {
  const rules = compileCheck(R.patch.body.schema as never) as (body: unknown) => EgressRule[];
  const targets = compileCheck(R.delete.body.schema as never) as (body: unknown) => string[];
  return [
    served(R.get, async ({ params, res }) => sendJson(res, 200, answer(await inForce(sandboxes, params.id)))),
    served(R.patch, async ({ params, body, res }) => {
      const incoming = checkedRules(rules(body), 'body');
      const state = await inForce(sandboxes, params.id);
      // Rules that repeat the default action change nothing where no rule can be held: served there too, as before rules were.
      if (!state.own && incoming.every((r) => r.action === (state.policy === 'none' ? 'deny' : 'allow'))) return sendJson(res, 200, answer(state));
      sendJson(res, 200, answer(await change(sandboxes, params.id, state, mergeRules(state.rules, incoming))));
    }),
    served(R.delete, async ({ params, body, res }) => {
      const gone = targets(body);
      const state = await inForce(sandboxes, params.id);
      sendJson(res, 200, answer(await change(sandboxes, params.id, state, removeRules(state.rules, gone))));
    }),
  ];
}
