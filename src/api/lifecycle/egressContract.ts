/**
 * The egress sidecar's `/policy` (where a sandbox's egress endpoint leads, `/sandboxes/{id}/egress`),
 * served with OpenSandbox's semantics (docs/network.md): the policy a sandbox has, its
 * `defaultAction` (deny: no egress; allow: its pool's network) and its rules, walked in order before
 * it; PATCH merges rules (one for a target already there replaces it), DELETE removes them by target.
 */
import type { RouteContract } from '../../http/contract';
import { NETWORK_POLICY_SCHEMA } from './networkPolicy';

const STATUS = {
  type: 'object',
  properties: {
    status: { type: 'string', description: 'ok' },
    mode: { type: 'string', enum: ['deny_all', 'allow_all', 'enforcing'], description: 'deny_all: no egress; allow_all: its pool network; enforcing: rules before the default action' },
    enforcementMode: { type: 'string', description: "netns: the session's own network namespace; container: its container's network" },
    policy: { type: 'object', description: 'the NetworkPolicy in force (defaultAction and its egress rules)' },
  },
};
const EGRESS_RULES = { ...(NETWORK_POLICY_SCHEMA.properties as Record<string, Record<string, unknown>>).egress, 'x-refusal': { type: 'the body must be a list of rules ({"action", "target"})' } };
const TARGETS = { type: 'array', items: { type: 'string', 'x-refusal': { '*': '{field} must be a target (an address, a CIDR or a domain)' } }, 'x-refusal': { type: 'the body must be a list of targets' } };
const ERRORS = { 404: 'no such sandbox (`NOT_FOUND`)' };
const ANSWER = { 200: { description: 'the policy in force', schema: STATUS, example: { status: 'ok', mode: 'deny_all', enforcementMode: 'netns', policy: { defaultAction: 'deny', egress: [] } } } };

export const EGRESS_POLICY_ROUTES = {
  get: { method: 'GET', path: '/sandboxes/:id/egress/policy', summary: 'The egress policy in force (the sidecar\'s GET /policy)', responses: ANSWER, errors: ERRORS },
  patch: {
    method: 'PATCH',
    path: '/sandboxes/:id/egress/policy',
    summary: "Merge rules (the sidecar's PATCH /policy): a rule for a target already there replaces it, a new one is appended",
    body: { schema: EGRESS_RULES, example: [{ action: 'deny', target: 'example.com' }] },
    responses: ANSWER,
    errors: { ...ERRORS, 400: 'not a list of rules, or a target that is not an address, a CIDR or a domain (`INVALID_REQUEST_BODY`)', 501: 'the sandbox shares its container\'s network and holds no rules (`NOT_SUPPORTED`)' },
  },
  delete: {
    method: 'DELETE',
    path: '/sandboxes/:id/egress/policy',
    summary: "Remove rules by target (the sidecar's DELETE /policy): a target with no rule changes nothing (idempotent)",
    body: { schema: TARGETS, example: ['example.com'] },
    responses: ANSWER,
    errors: { ...ERRORS, 400: 'not a list of targets (`INVALID_REQUEST_BODY`)' },
  },
} satisfies Record<string, RouteContract>;
