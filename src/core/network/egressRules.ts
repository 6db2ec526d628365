/**
 * A session's egress rules (docs/network.md), with OpenSandbox's egress policy semantics: a list of
 * `{action, target}` evaluated in order, the first rule that matches a destination decides, and
 * the default action decides the rest. A target is an IPv4 or IPv6 address, a CIDR, a domain
 * (`example.com`), or a wildcard domain (`*.example.com`: any name below example.com at any depth,
 * not example.com itself). Pure: the APIs check their bodies with it, backends enforce it.
 */
import { isIP } from 'node:net';

export type EgressAction = 'allow' | 'deny';

export interface EgressRule {
  action: EgressAction;
  target: string;
}

/** What a target names: addresses (an address is its own /32 or /128), or names the session resolves. */
export type EgressTarget = { kind: 'cidr'; family: 4 | 6; cidr: string } | { kind: 'domain'; name: string; wildcard: boolean };

/** At most this many rules per session: each is a rule its network's filter walks for a new flow. */
export const MAX_EGRESS_RULES = 256;

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** The target's meaning, or a sentence saying why it is none. */
export function parseTarget(raw: string): EgressTarget | string {
  const target = raw.trim().toLowerCase();
  const [address, bits, extra] = target.split('/');
  const family = isIP(address ?? '');
  if (family === 4 || family === 6) {
    if (extra !== undefined || (bits !== undefined && !/^\d{1,3}$/.test(bits))) return `"${raw}" is not an address or a CIDR`;
    const max = family === 4 ? 32 : 128;
    const prefix = bits === undefined ? max : Number(bits);
    if (prefix > max) return `"${raw}": a prefix of /${prefix} is longer than the address (/${max})`;
    return { kind: 'cidr', family, cidr: `${address}/${prefix}` };
  }
  if (bits !== undefined) return `"${raw}" is not a CIDR (its address is not an IPv4 or IPv6 address)`;
  const name = target.endsWith('.') ? target.slice(0, -1) : target;
  const wildcard = name.startsWith('*.');
  const labels = (wildcard ? name.slice(2) : name).split('.');
  // A name whose last label is digits is a mistyped address (`300.1.2.3`), never a domain: no top-level domain is numeric.
  if (/^\d+$/.test(labels[labels.length - 1] ?? '')) return `"${raw}" is not an address (an IPv4 address has four parts of 0 to 255) nor a domain`;
  if (name.length > 253 || !labels.every((l) => LABEL.test(l))) {
    return `"${raw}" is not an address, a CIDR, a domain ("example.com") or a wildcard domain ("*.example.com": a "*." before a domain, nowhere else)`;
  }
  return { kind: 'domain', name: wildcard ? name.slice(2) : name, wildcard };
}

/** Whether domain rule `target` matches `name` (a name the session asked for, any case, any trailing dot). */
export function domainMatches(target: Extract<EgressTarget, { kind: 'domain' }>, name: string): boolean {
  const n = name.toLowerCase().replace(/\.$/, '');
  return target.wildcard ? n.endsWith(`.${target.name}`) : n === target.name;
}

/** The rules' targets parsed, or the sentence of the first that is not one (a 400 in each API's format). */
export function checkRules(rules: readonly EgressRule[], field: string): { rule: EgressRule; target: EgressTarget }[] | string {
  if (rules.length > MAX_EGRESS_RULES) return `${field}: at most ${MAX_EGRESS_RULES} rules, got ${rules.length}`;
  const out: { rule: EgressRule; target: EgressTarget }[] = [];
  for (const [i, rule] of rules.entries()) {
    const target = parseTarget(rule.target);
    if (typeof target === 'string') return `${field}[${i}].target: ${target}`;
    out.push({ rule: { action: rule.action, target: rule.target.trim() }, target });
  }
  return out;
}

/**
 * PATCH's merge (the sidecar's): a rule for a target already present replaces it in place, a new one
 * is appended; DELETE's removal by target. Targets compare as parsed (case, a trailing dot).
 */
export function mergeRules(current: readonly EgressRule[], incoming: readonly EgressRule[]): EgressRule[] {
  const merged = [...current];
  for (const rule of incoming) {
    const at = merged.findIndex((r) => sameTarget(r.target, rule.target));
    if (at >= 0) merged[at] = rule;
    else merged.push(rule);
  }
  return merged;
}

export function removeRules(current: readonly EgressRule[], targets: readonly string[]): EgressRule[] {
  return current.filter((r) => !targets.some((t) => sameTarget(r.target, t)));
}

function sameTarget(a: string, b: string): boolean {
  const key = (t: string): string => {
    const p = parseTarget(t);
    return typeof p === 'string' ? t : p.kind === 'cidr' ? p.cidr : `${p.wildcard ? '*.' : ''}${p.name}`;
  };
  return key(a) === key(b);
}
