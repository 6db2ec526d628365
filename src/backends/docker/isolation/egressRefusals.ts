/**
 * A session's egress refusals, read from the engine's host through its bash's host pid
 * (/proc/<pid>/net is the network namespace of that process), without a process of its own:
 *
 * - `Ip: OutNoRoutes` of its /proc/net/snmp, counted by the kernel: under policy `none` every
 *   connection or datagram out of the loopback is refused there (no route), so the count of a
 *   command is how many it tried; under `full` a packet with no route is refused the same.
 * - The flows its egress rules refused (egressFilter.ts): its conntrack table's entries of
 *   REFUSED_MARK, each with the host and port it was for. An entry lives as long as conntrack keeps
 *   an unanswered flow (30 s for UDP, 2 min for a TCP connect), longer than most commands; a
 *   command's are the ones not there at its start.
 *
 * A neighbour's refusals are in its own namespace: never counted here.
 */
import fs from 'node:fs';
import { REFUSED_MARK } from './egressFilter';

/** What a command's facts are made of (UsageCounters' egressRefusals and egressRefusedFlows). */
export interface EgressCounts {
  egressRefusals: number | null;
  /** Each refused flow of the rules still in conntrack, as `host:port proto sport` (distinct per flow). */
  egressRefusedFlows?: string[] | null;
}

/** OutNoRoutes and the refused flows of the network namespace of host process `hostPid` (null: cannot be read: gone, not on this host). */
export function egressRefusals(hostPid: number): EgressCounts {
  let snmp: string;
  try {
    snmp = fs.readFileSync(`/proc/${hostPid}/net/snmp`, 'latin1');
  } catch {
    return { egressRefusals: null };
  }
  // Two `Ip:` lines: the names, then the values, in the same order.
  const [names, values] = snmp.split('\n').filter((l) => l.startsWith('Ip:')).map((l) => l.split(/\s+/));
  const at = names?.indexOf('OutNoRoutes') ?? -1;
  return { egressRefusals: at > 0 && values ? Number(values[at]) : null, egressRefusedFlows: refusedFlows(hostPid) };
}

const MARK = `mark=${REFUSED_MARK} `;

function refusedFlows(hostPid: number): string[] | null {
  let table: string;
  try {
    table = fs.readFileSync(`/proc/${hostPid}/net/nf_conntrack`, 'latin1');
  } catch {
    return null;
  }
  const flows: string[] = [];
  for (const line of table.split('\n')) {
    if (!line.includes(MARK)) continue;
    // The original direction's tuple comes first: `... proto N ... src=A dst=B sport=P dport=Q ...`.
    const proto = /^\S+\s+\d+\s+(\S+)/.exec(line)?.[1];
    const dst = /\bdst=(\S+)/.exec(line)?.[1];
    const sport = /\bsport=(\d+)/.exec(line)?.[1];
    const dport = /\bdport=(\d+)/.exec(line)?.[1];
    if (proto && dst) flows.push(`${dst}:${dport ?? 0} ${proto} ${sport ?? 0}`);
  }
  return flows;
}
