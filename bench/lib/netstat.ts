import fs from 'node:fs';

/**
 * TcpExt ListenOverflows, machine-wide: connections dropped because a listen queue was full. The
 * client then retransmits its SYN/ACK after 1, 2, 4 ... s, which shows up as multi-second latency.
 */
export function listenOverflows(): number {
  try {
    const lines = fs.readFileSync('/proc/net/netstat', 'latin1').split('\n');
    const header = lines.findIndex((l) => l.startsWith('TcpExt:'));
    const names = lines[header].split(/\s+/);
    const values = lines[header + 1].split(/\s+/);
    return Number(values[names.indexOf('ListenOverflows')]);
  } catch {
    return NaN;
  }
}
