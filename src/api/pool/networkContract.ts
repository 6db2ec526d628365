/**
 * `PUT /session/{id}/network`: a lease's egress changed while it runs (docs/isolation.md), as a
 * rollout often needs: the network to set up (`pip install`), then none while the agent works and
 * while it is graded. Part of the pool API's contract (poolContract.ts spreads it in).
 */
import { Type, type Static } from '@sinclair/typebox';
import type { RouteContract } from '../../http/contract';
import type { EgressRule } from '../../core/network/egressRules';

const POLICY_REFUSAL = `'policy' must be "none" or "full", got {json}`;

export const NETWORK_BODY = Type.Object(
  {
    policy: Type.Unsafe<'none' | 'full'>({
      type: 'string',
      enum: ['none', 'full'],
      description: "none: the session's own loopback alone (connecting or resolving outside fails at once); full: what its container reaches. With egress rules: what no rule matches gets (none: refused, full: let through)",
      'x-refusal': { '*': POLICY_REFUSAL },
    }),
    egress: Type.Optional(
      Type.Unsafe<EgressRule[]>({
        type: 'array',
        description: 'rules walked in order before the policy, the first that matches decides (OpenSandbox\'s NetworkRule): a target is an address, a CIDR, a domain or a wildcard domain ("*.example.com")',
        items: {
          type: 'object',
          properties: {
            action: { type: 'string', enum: ['allow', 'deny'], 'x-refusal': { '*': '{field} must be "allow" or "deny", got {json}' } },
            target: { type: 'string', minLength: 1, 'x-no-nul': true, 'x-refusal': { '*': '{field} must be an address, a CIDR or a domain, got {json}' } },
          },
          required: ['action', 'target'],
          'x-known-fields': { known: ['action', 'target'], refusal: '{field}: unknown field(s) {unknown}; a rule has action and target' },
          'x-refusal': { type: '{field} must be a JSON object', required: '{field} needs action and target' },
        },
        'x-refusal': { type: "'egress' must be a list of rules ({\"action\", \"target\"})" },
      }),
    ),
  },
  {
    'x-known-fields': { known: ['policy', 'egress'], refusal: 'unknown field(s) {unknown}; the body is {"policy": "none" | "full", "egress": [rules]}' },
    'x-refusal': { required: POLICY_REFUSAL.replace('{json}', 'undefined'), type: 'Request body must be a JSON object, got {a}' },
  },
);
export type NetworkBody = Static<typeof NETWORK_BODY>;

export const NETWORK_SET = Type.Object({ session_id: Type.String(), policy: Type.String(), egress: Type.Array(Type.Object({ action: Type.String(), target: Type.String() })) }, { additionalProperties: false });
export type NetworkSet = Static<typeof NETWORK_SET>;

export const NETWORK_ROUTE = {
  method: 'PUT',
  path: '/session/:sessionId/network',
  summary: "Change the lease's egress: none or full, with egress rules before it or none (until its release; the slot's next lease gets its pool's)",
  body: { schema: NETWORK_BODY, example: { policy: 'none', egress: [{ action: 'allow', target: '10.0.0.0/8' }, { action: 'allow', target: '*.pypi.org' }] } },
  responses: { 200: { description: 'in force from now on', schema: NETWORK_SET, example: { session_id: '0f3c...', policy: 'none', egress: [{ action: 'allow', target: '10.0.0.0/8' }] } } },
  errors: {
    400: 'a bad policy or rule (`bad_request`), or the lease ended (`session_not_in_use`)',
    404: 'no session of this id was ever leased (`session_not_found`)',
    409: "the session shares its container's network (BROKER_SESSION_NETWORK=shared, or the host cannot): no policy of its own to change (`network_unchangeable`)",
    410: 'its shell or container died: its state is lost (`session_broken`)',
    501: 'the backend gives sessions no networks of their own (`not_supported`)',
  },
} satisfies RouteContract;
