/**
 * One session's egress rules (docs/network.md): its filter (egressFilter.ts) and its resolver, a UDP
 * socket of the broker's on the engine's host, at the address the container reaches the host by,
 * to which the session's DNS goes. A name that a rule allows (or that no rule matches, under a
 * default of allow) is asked of the broker's upstream servers, and the A records of the answer
 * become destinations of that rule in the session's filter before the session gets the answer, so
 * its connect that follows is let through; a name a rule denies (or that no rule matches, under
 * deny) is answered NXDOMAIN at once.
 *
 * Why this and not names resolved once when the policy is set: a wildcard (`*.pypi.org`) names
 * no address until a session asks for a name under it, and a name's addresses change (a CDN's move
 * with their TTL), so the addresses the session connects to are the ones the resolver just gave
 * it. The cost is one iptables-restore in the session's namespace (a process of the host's: about
 * 33 ms of wall time and 3.5 ms of CPU, docs/network.md) for an answer that brings an address not
 * yet learned; a known one only has its time extended. A learned address is kept for its TTL, at least
 * MIN_LEARNED_S (resolvers cache an answer for its TTL: the session may connect that long after).
 */
import dgram from 'node:dgram';
import { logger } from '../../../common/logger';
import { domainMatches, type EgressAction, type EgressRule, type EgressTarget } from '../../../core/network/egressRules';
import { addressesOf, questionOf, refusal } from './dnsMessage';
import { applyFilter, type FilterEntry } from './egressFilter';

const MIN_LEARNED_S = 30;
const MAX_LEARNED_S = 86_400;
const UPSTREAM_TIMEOUT_MS = 3_000;

interface CheckedRule {
  rule: EgressRule;
  target: EgressTarget;
  /** A domain rule's learned addresses → when each expires (ms, Date.now()). */
  learned: Map<string, number>;
}

export class SessionEgress {
  private rules: CheckedRule[] = [];
  private defaultAction: EgressAction = 'deny';
  private socket: dgram.Socket | null = null;
  private dnsAt: string | null = null;
  /** Filter writes, one after the other (each writes the whole tables). */
  private writes: Promise<void> = Promise.resolve();
  private expiry: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    /** The session bash's host pid: its network namespace. */
    private readonly hostPid: number,
    /** The host's address the container reaches (its network's gateway); null: no resolver, DNS is a flow as any other. */
    private readonly gateway: string | null,
    /** Upstream DNS servers (`address` or `address:port`). */
    private readonly upstream: () => string[],
  ) {}

  /** Its rules from now on (checked ones), in force when this resolves; when it throws, the rules before are. */
  async set(defaultAction: EgressAction, rules: readonly { rule: EgressRule; target: EgressTarget }[]): Promise<void> {
    if (this.gateway && !this.socket) await this.listen(this.gateway);
    const before = { defaultAction: this.defaultAction, rules: this.rules };
    this.defaultAction = defaultAction;
    // A name's addresses stay learned across a change: the session's resolver may have them cached.
    const learned = new Map(this.rules.map((r) => [r.rule.target.toLowerCase(), r.learned]));
    this.rules = rules.map((r) => ({ ...r, learned: learned.get(r.rule.target.toLowerCase()) ?? new Map() }));
    try {
      await this.write();
    } catch (err) {
      // iptables-restore writes all or nothing: the tables are still the rules' before.
      Object.assign(this, before);
      throw err;
    }
  }

  /** The rules in force, as given. */
  state(): { defaultAction: EgressAction; rules: EgressRule[] } {
    return { defaultAction: this.defaultAction, rules: this.rules.map((r) => r.rule) };
  }

  /** Its filter removed (the policy alone from now on) and its resolver closed. */
  async clear(): Promise<void> {
    this.close();
    await this.writes.catch(() => undefined);
    await applyFilter(this.hostPid, null);
  }

  close(): void {
    this.closed = true;
    if (this.expiry) clearTimeout(this.expiry);
    this.socket?.close();
    this.socket = null;
  }

  private async listen(gateway: string): Promise<void> {
    const socket = dgram.createSocket('udp4');
    // Where the host has no such address (an engine elsewhere), the bind fails and the change with it (a 409).
    socket.on('message', (msg, from) => void this.answer(msg).then((reply) => reply && !this.closed && socket.send(reply, from.port, from.address)));
    socket.on('error', (err) => logger.warn({ err: err.message }, "a session's egress resolver failed"));
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, gateway, () => resolve());
    });
    this.socket = socket;
    this.dnsAt = `${gateway}:${socket.address().port}`;
  }

  /** The answer for one query of the session (null: none, it was not a query). */
  private async answer(query: Buffer): Promise<Buffer | null> {
    const q = questionOf(query);
    if (!q) return null;
    const rule = this.rules.find((r) => r.target.kind === 'domain' && domainMatches(r.target, q.name));
    const action = rule?.rule.action ?? this.defaultAction;
    if (action === 'deny') return refusal(query, q.end, 3);
    const reply = await this.ask(query).catch(() => null);
    if (!reply) return refusal(query, q.end, 2);
    const found = addressesOf(reply);
    if (rule && found && found.addresses.length > 0) await this.learn(rule, found.addresses, found.ttlS).catch((err: Error) => logger.warn({ err: err.message }, "a session's egress filter could not take a name's addresses"));
    return reply;
  }

  /** The upstream servers' answer to `query`, the first that comes. */
  private async ask(query: Buffer): Promise<Buffer> {
    const servers = this.upstream();
    if (servers.length === 0) throw new Error('no upstream DNS server');
    const socket = dgram.createSocket('udp4');
    try {
      return await new Promise<Buffer>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no answer')), UPSTREAM_TIMEOUT_MS);
        socket.on('message', (msg) => {
          if (msg.length >= 2 && msg.readUInt16BE(0) === query.readUInt16BE(0)) {
            clearTimeout(timer);
            resolve(msg);
          }
        });
        socket.on('error', reject);
        for (const server of servers) {
          const [host, port] = server.includes(':') && !server.includes('::') ? server.split(':') : [server, '53'];
          socket.send(query, Number(port), host);
        }
      });
    } finally {
      socket.close();
    }
  }

  private async learn(rule: CheckedRule, addresses: string[], ttlS: number): Promise<void> {
    const until = Date.now() + Math.min(MAX_LEARNED_S, Math.max(MIN_LEARNED_S, ttlS)) * 1000;
    const fresh = addresses.filter((a) => !rule.learned.has(a));
    for (const a of addresses) rule.learned.set(a, Math.max(until, rule.learned.get(a) ?? 0));
    if (fresh.length > 0) await this.write();
    this.scheduleExpiry();
  }

  private scheduleExpiry(): void {
    if (this.expiry) clearTimeout(this.expiry);
    const next = Math.min(...this.rules.flatMap((r) => [...r.learned.values()]));
    if (next === Infinity || this.closed) return;
    this.expiry = setTimeout(() => {
      const now = Date.now();
      for (const r of this.rules) for (const [a, until] of r.learned) if (until <= now) r.learned.delete(a);
      void this.write().catch(() => undefined);
      this.scheduleExpiry();
    }, Math.max(0, next - Date.now()) + 10);
    this.expiry.unref();
  }

  /** The whole filter written again: the rules in order, each domain rule's learned addresses at its place. */
  private write(): Promise<void> {
    const entries: FilterEntry[] = this.rules.flatMap((r): FilterEntry[] => {
      if (r.target.kind === 'cidr') return r.target.family === 4 ? [{ destination: r.target.cidr, action: r.rule.action }] : [];
      return [...r.learned.keys()].map((a) => ({ destination: a, action: r.rule.action }));
    });
    const plan = { entries, defaultAction: this.defaultAction, dns: this.dnsAt };
    const done = this.writes.catch(() => undefined).then(() => (this.closed ? undefined : applyFilter(this.hostPid, plan)));
    this.writes = done;
    return done;
  }
}
