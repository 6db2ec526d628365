/**
 * The little of the DNS wire format (RFC 1035) the egress filter's resolver needs: a query's
 * question name, an answer's IPv4 addresses with the least TTL among them, and a refusal (NXDOMAIN)
 * for a query. Malformed input is null, never a throw: the datagrams come from a session.
 */

const HEADER = 12;
const TYPE_A = 1;
/** A name's compression pointers, at most: a loop in a hostile answer ends here. */
const MAX_JUMPS = 32;

/** The name at `offset` (pointers followed) and where the record goes on after it; null when malformed. */
function readName(msg: Buffer, offset: number): { name: string; next: number } | null {
  const labels: string[] = [];
  let at = offset;
  let next = -1;
  for (let jumps = 0; jumps <= MAX_JUMPS; ) {
    if (at >= msg.length) return null;
    const len = msg[at]!;
    if (len === 0) return { name: labels.join('.'), next: next < 0 ? at + 1 : next };
    if ((len & 0xc0) === 0xc0) {
      if (at + 1 >= msg.length) return null;
      if (next < 0) next = at + 2;
      at = ((len & 0x3f) << 8) | msg[at + 1]!;
      jumps++;
      continue;
    }
    if (len > 63 || at + 1 + len > msg.length) return null;
    labels.push(msg.toString('latin1', at + 1, at + 1 + len));
    at += 1 + len;
  }
  return null;
}

/** A query's single question: its name (lower case) and where the question ends; null for anything else. */
export function questionOf(msg: Buffer): { name: string; end: number } | null {
  if (msg.length < HEADER || (msg[2]! & 0x80) !== 0 || msg.readUInt16BE(4) !== 1) return null;
  const q = readName(msg, HEADER);
  if (!q || q.next + 4 > msg.length) return null;
  return { name: q.name.toLowerCase(), end: q.next + 4 };
}

/** An answer's A records' addresses and their least TTL (seconds); null when malformed. */
export function addressesOf(msg: Buffer): { addresses: string[]; ttlS: number } | null {
  if (msg.length < HEADER) return null;
  let at = HEADER;
  for (let i = msg.readUInt16BE(4); i > 0; i--) {
    const q = readName(msg, at);
    if (!q) return null;
    at = q.next + 4;
  }
  const addresses: string[] = [];
  let ttlS = Infinity;
  for (let i = msg.readUInt16BE(6); i > 0; i--) {
    const r = readName(msg, at);
    if (!r || r.next + 10 > msg.length) return null;
    const type = msg.readUInt16BE(r.next);
    const ttl = msg.readUInt32BE(r.next + 4);
    const length = msg.readUInt16BE(r.next + 8);
    const data = r.next + 10;
    if (data + length > msg.length) return null;
    if (type === TYPE_A && length === 4) {
      addresses.push(`${msg[data]}.${msg[data + 1]}.${msg[data + 2]}.${msg[data + 3]}`);
      ttlS = Math.min(ttlS, ttl);
    }
    at = data + length;
  }
  return { addresses, ttlS: ttlS === Infinity ? 0 : ttlS };
}

/** The answer to `query` (whose question ends at `end`) with rcode `rcode` (3: NXDOMAIN, 2: SERVFAIL) and no records. */
export function refusal(query: Buffer, end: number, rcode: 2 | 3): Buffer {
  const answer = Buffer.from(query.subarray(0, end));
  // QR set, the opcode and RD kept; RA set, the rcode given.
  answer[2] = 0x80 | (query[2]! & 0x79);
  answer[3] = 0x80 | rcode;
  answer.writeUInt16BE(0, 6);
  answer.writeUInt16BE(0, 8);
  answer.writeUInt16BE(0, 10);
  return answer;
}
