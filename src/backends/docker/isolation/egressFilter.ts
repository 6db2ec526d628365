/**
 * A session's egress rules enforced in its own network namespace (docs/network.md): the host's
 * `nsenter` and `iptables-restore` (as for the container's routing, sessionNetwork.ts) write the
 * namespace's `mangle` and `nat` tables, which nothing else there uses; the session's processes
 * cannot change them (no CAP_NET_ADMIN).
 *
 * The rules are walked in order for each new flow out of the session (its replies and the flows
 * already under way pass: a change applies to new connections). An address or CIDR rule matches
 * its destination; a domain rule matches the addresses the session's resolver learned for a name
 * it matches (sessionEgress.ts), at that rule's place. What matches no rule gets the default action.
 *
 * A refused flow is marked, not dropped here: its conntrack entry gets REFUSED_MARK (so the broker
 * reads which host and port it was from the namespace's conntrack table, egressRefusals.ts) and its
 * packets REFUSED_DSCP, which the container's forwarding refuses with an ICMP answer
 * (sessionNetwork.ts): the session's connect fails at once (`No route to host`), never a silent drop.
 * A flow refused in the session's own filter table would leave no conntrack entry to read.
 *
 * DNS (UDP port 53, to any server) goes to the broker's resolver for this session (`dns`), which
 * answers only names the rules let through and learns their addresses before the session gets them.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { EgressAction } from '../../../core/network/egressRules';

const run = promisify(execFile);

/** The conntrack mark of a refused flow (egressRefusals.ts reads it). */
export const REFUSED_MARK = 0x62;
/** The DSCP of a refused flow's packets, which the container's forwarding refuses (sessionNetwork.ts). */
export const REFUSED_DSCP = 0x39;

/** One step of the walk: a destination (an IPv4 address or CIDR) and what it gets. */
export interface FilterEntry {
  destination: string;
  action: EgressAction;
}

export interface FilterPlan {
  entries: FilterEntry[];
  defaultAction: EgressAction;
  /** The broker's resolver for this session (`address:port`); null: DNS is a flow as any other. */
  dns: string | null;
}

/** The namespace's tables for `plan`, in iptables-restore's format (without --noflush: they replace what was). */
export function filterTables(plan: FilterPlan | null): string {
  if (!plan) return '*mangle\nCOMMIT\n*nat\nCOMMIT\n';
  const verdict = (a: EgressAction): string => (a === 'allow' ? 'RETURN' : 'BKR_REFUSE');
  const lines = [
    '*mangle',
    ':BKR_REFUSE - [0:0]',
    `-A BKR_REFUSE -j CONNMARK --set-mark 0x${REFUSED_MARK.toString(16)}`,
    `-A BKR_REFUSE -j DSCP --set-dscp 0x${REFUSED_DSCP.toString(16)}`,
    '-A OUTPUT -o lo -j RETURN',
    '-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN',
    ...(plan.dns ? ['-A OUTPUT -p udp --dport 53 -j RETURN'] : []),
    ...plan.entries.map((e) => `-A OUTPUT -d ${e.destination} -j ${verdict(e.action)}`),
    ...(plan.defaultAction === 'deny' ? ['-A OUTPUT -j BKR_REFUSE'] : []),
    'COMMIT',
    '*nat',
    ...(plan.dns ? [`-A OUTPUT -p udp --dport 53 -j DNAT --to-destination ${plan.dns}`, `-A POSTROUTING -p udp -d ${plan.dns.split(':')[0]} -j MASQUERADE`] : []),
    'COMMIT',
  ];
  // IPv6: a session has no route for it (its veth is IPv4 alone), so none leaves whatever the rules say.
  return `${lines.join('\n')}\n`;
}

/**
 * Writes `plan`'s tables into the network namespace of host process `hostPid`. With a resolver, the
 * namespace routes loopback sources out (`route_localnet`, its own sysctl): a container on an
 * engine's user network resolves at 127.0.0.11, and that query, sent from 127.0.0.1 and turned to the
 * broker's resolver, leaves by the veth with the veth's address (the MASQUERADE above); the
 * container's namespace still drops any other packet from a loopback address.
 */
export async function applyFilter(hostPid: number, plan: FilterPlan | null): Promise<void> {
  const localnet = `echo ${plan?.dns ? 1 : 0} >/proc/sys/net/ipv4/conf/all/route_localnet`;
  const child = run('nsenter', ['-t', String(hostPid), '-n', 'sh', '-c', `${localnet} && exec iptables-restore -w`], { timeout: 10_000 });
  child.child.stdin?.end(filterTables(plan));
  await child;
}
