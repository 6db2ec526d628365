/**
 * OpenSandbox's `networkPolicy` on create (its egress sidecar's `/policy` body), read into the
 * session's egress (docs/isolation.md): null, `{}` or none at all is allow-all; `defaultAction`
 * defaults to `deny`; with no rule that differs from it, `deny` is no egress (`none`) and `allow` is
 * what the container reaches (`full`). Rules that make an allow-list or a deny-list of domains are
 * refused with 501: the broker enforces no domain policy.
 */
import { NotImplementedError } from '../../common/errors';
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
        properties: { action: ACTION('networkPolicy.egress[].action'), target: { type: 'string', minLength: 1, 'x-no-nul': true, 'x-refusal': { '*': '{field} must be a domain ("example.com", "*.example.com")' } } },
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
export function egressOf(policy: NetworkPolicy | null | undefined): EgressPolicy | undefined {
  if (policy == null || Object.keys(policy).length === 0) return undefined;
  const action = policy.defaultAction ?? 'deny';
  const exceptions = (policy.egress ?? []).filter((r) => r.action !== action);
  if (exceptions.length > 0) {
    throw new NotImplementedError(`networkPolicy.egress: rules by domain (${exceptions.map((r) => `${r.action} ${r.target}`).join(', ')}) are not served by this broker; defaultAction alone is (deny: no egress, allow: its pool's network)`);
  }
  return action === 'deny' ? 'none' : 'full';
}
