/**
 * Egress rules' targets and merges (src/core/network/egressRules.ts) and the DNS messages the
 * egress resolver reads (src/backends/docker/isolation/dnsMessage.ts): what OpenSandbox's egress
 * policy accepts is accepted (addresses, CIDRs, domains, `*.` wildcards, matched below the domain
 * only), anything else is a sentence for a 400; hostile DNS datagrams are null, never a throw.
 * The rules' enforcement is test/isolation/sessionEgress.test.ts (docker, real traffic).
 * @backend any
 */
import { checkRules, domainMatches, mergeRules, parseTarget, removeRules } from '../../src/core/network/egressRules';
import { addressesOf, questionOf, refusal } from '../../src/backends/docker/isolation/dnsMessage';

describe('egress rule targets', () => {
  it('reads addresses, CIDRs, domains and wildcards; refuses anything else with a sentence', () => {
    expect(parseTarget('10.1.2.3')).toEqual({ kind: 'cidr', family: 4, cidr: '10.1.2.3/32' });
    expect(parseTarget(' 10.0.0.0/8 ')).toEqual({ kind: 'cidr', family: 4, cidr: '10.0.0.0/8' });
    expect(parseTarget('2001:db8::/32')).toEqual({ kind: 'cidr', family: 6, cidr: '2001:db8::/32' });
    expect(parseTarget('PyPI.org.')).toEqual({ kind: 'domain', name: 'pypi.org', wildcard: false });
    expect(parseTarget('*.pypi.org')).toEqual({ kind: 'domain', name: 'pypi.org', wildcard: true });
    for (const bad of ['*', 'a.*.org', '*pypi.org', '10.0.0.0/33', '10.0.0.0/x', '300.1.2.3', 'exa mple.com', '-a.com', 'a..com', '', `${'a'.repeat(64)}.com`]) {
      expect({ bad, why: typeof parseTarget(bad) }).toEqual({ bad, why: 'string' });
    }
  });

  it("a wildcard matches names below its domain at any depth, not the domain itself (OpenSandbox's)", () => {
    const wild = parseTarget('*.example.com') as Extract<ReturnType<typeof parseTarget>, { kind: 'domain' }>;
    expect(['a.example.com', 'b.a.example.com', 'A.Example.COM.'].map((n) => domainMatches(wild, n))).toEqual([true, true, true]);
    expect(['example.com', 'badexample.com', 'example.com.evil'].map((n) => domainMatches(wild, n))).toEqual([false, false, false]);
  });

  it('checks a list (its first bad target named), merges by target in place, removes by target', () => {
    expect(checkRules([{ action: 'allow', target: 'a.com' }, { action: 'deny', target: 'a.*' }], 'egress')).toMatch(/^egress\[1\]\.target: /);
    const current = [{ action: 'allow' as const, target: 'a.com' }, { action: 'deny' as const, target: '10.0.0.0/8' }];
    expect(mergeRules(current, [{ action: 'deny', target: 'A.com.' }, { action: 'allow', target: 'b.com' }])).toEqual([
      { action: 'deny', target: 'A.com.' },
      { action: 'deny', target: '10.0.0.0/8' },
      { action: 'allow', target: 'b.com' },
    ]);
    expect(removeRules(current, ['a.com', 'nothing.com'])).toEqual([{ action: 'deny', target: '10.0.0.0/8' }]);
  });
});

describe('egress resolver DNS messages', () => {
  const query = Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, 97, 4, 116, 101, 115, 116, 0, 0, 1, 0, 1]);

  it('reads a query\'s name, an answer\'s A records and least TTL, and makes an NXDOMAIN of a query', () => {
    expect(questionOf(query)).toEqual({ name: 'a.test', end: query.length });
    const answer = Buffer.concat([query, Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 9, 0, 4, 10, 0, 0, 2])]);
    answer[2] = 0x81;
    answer.writeUInt16BE(2, 6);
    expect(addressesOf(answer)).toEqual({ addresses: ['10.0.0.1', '10.0.0.2'], ttlS: 9 });
    const nx = refusal(query, query.length, 3);
    expect([nx.readUInt16BE(0), nx[2]! & 0x80, nx[3]! & 0x0f, nx.readUInt16BE(4), nx.readUInt16BE(6)]).toEqual([0x1234, 0x80, 3, 1, 0]);
  });

  it('hostile datagrams are null: short, a pointer loop, an answer running past its end', () => {
    expect(questionOf(Buffer.alloc(5))).toBeNull();
    const loop = Buffer.from([0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1]);
    expect(questionOf(loop)).toBeNull();
    const cut = Buffer.concat([query, Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10])]);
    cut.writeUInt16BE(1, 6);
    expect(addressesOf(cut)).toBeNull();
  });
});
