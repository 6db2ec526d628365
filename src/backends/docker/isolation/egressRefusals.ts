/**
 * A session's egress refusals, counted by the kernel in its own network namespace: `Ip:
 * OutNoRoutes` of its /proc/net/snmp, read from the engine's host through its bash's host pid
 * (/proc/<pid>/net is the network namespace of that process). Under policy `none` every connection
 * or datagram out of the loopback is refused there (no route), so the count of a command is how many
 * it tried; under `full` a packet with no route is refused the same. A neighbour's refusals are in
 * its own namespace: never counted here.
 */
import fs from 'node:fs';

/** OutNoRoutes of the network namespace of host process `hostPid`; null when it cannot be read (gone, not on this host). */
export function egressRefusals(hostPid: number): number | null {
  let snmp: string;
  try {
    snmp = fs.readFileSync(`/proc/${hostPid}/net/snmp`, 'latin1');
  } catch {
    return null;
  }
  // Two `Ip:` lines: the names, then the values, in the same order.
  const [names, values] = snmp.split('\n').filter((l) => l.startsWith('Ip:')).map((l) => l.split(/\s+/));
  const at = names?.indexOf('OutNoRoutes') ?? -1;
  return at > 0 && values ? Number(values[at]) : null;
}
