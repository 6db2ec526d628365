/**
 * OpenSandbox's `networkPolicy` on create (its egress sidecar's `/policy` body), read into the
 * session's egress (docs/network.md): null, `{}` or none at all is allow-all; `defaultAction`
 * defaults to `deny` (no egress beyond what a rule allows: `none`), `allow` is what the container
 * reaches (`full`); its `egress` rules (addresses, CIDRs, domains, wildcard domains) are walked in
 * order before it (core/network/egressRules.ts). A target that is none of these is a 400.
 */
import { BadRequestError } from '../../common/errors';
import { checkRules, type EgressRule } from '../../core/network/egressRules';
import type { EgressPolicy } from '../../core/ports/sessionNetworks';

type Schema = Record<string, unknown>;

const ACTION = (field: string): Schema => ({ type: 'string', enum: ['allow', 'deny'], 'x-refusal': { '*': `${field} must be "allow" or "deny", got {json}` } });

export const NETWORK_POLICY_SCHEMA: Schema = {
  type: 'object',
  properties: {
    defaultAction: ACTION('networkPolicy.defaultAction'),
    egress: {
      type: 'array',
      items: {
        type: 'object',
        properties: { action: ACTION('networkPolicy.egress[].action'), target: { type: 'string', minLength: 1, 'x-no-nul': true, 'x-refusal': { '*': '{field} must be an address, a CIDR, a domain ("example.com") or a wildcard domain ("*.example.com")' } } },
        required: ['action', 'target'],
        'x-known-fields': { known: ['action', 'target'], refusal: '{field}: unknown field(s) {unknown}; a rule has action and target' },
        'x-refusal': { type: '{field} must be a JSON object', required: '{field} needs action and target' },
      },
      'x-refusal': { type: 'networkPolicy.egress must be a list of rules' },
    },
  },
  'x-known-fields': { known: ['defaultAction', 'egress'], refusal: 'networkPolicy: unknown field(s) {unknown}; it has defaultAction and egress' },
  'x-refusal': { type: 'networkPolicy must be a JSON object' },
};

export interface NetworkPolicy {
  defaultAction?: 'allow' | 'deny';
  egress?: { action: 'allow' | 'deny'; target: string }[];
}

/** The egress a checked policy asks for; undefined: allow-all (none given, null or `{}`). */
export function egressOf(policy: NetworkPolicy | null | undefined): { network: EgressPolicy; rules: EgressRule[] } | undefined {
  if (policy == null || Object.keys(policy).length === 0) return undefined;
  return { network: (policy.defaultAction ?? 'deny') === 'deny' ? 'none' : 'full', rules: checkedRules(policy.egress ?? [], 'networkPolicy.egress') };
}

/** The rules with their targets checked (a 400 naming the first that is not an address, a CIDR or a domain). */
export function checkedRules(rules: readonly EgressRule[], field: string): EgressRule[] {
  const checked = checkRules(rules, field);
  if (typeof checked === 'string') throw new BadRequestError(checked);
  return checked.map((c) => c.rule);
}
