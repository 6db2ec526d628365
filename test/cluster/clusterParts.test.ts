/**
 * The cluster's pure parts: its configuration, how ids name their node, the placement rule, the
 * acquires a record does not count yet, a gateway's line of waiting acquires, and a gateway's /health
 * over a membership. Where a gateway sends each call: gatewayRoutes.test.ts.
 * @backend any
 */
import { loadConfig, ConfigError } from '../../src/config/config';
import { nodeIdOf } from '../../src/config/clusterConfig';
import { idPrefixOf, newIncarnation, ownerOfId } from '../../src/cluster/clusterIds';
import { placeAcquire } from '../../src/cluster/gateway/placement';
import { UnseenAcquires } from '../../src/cluster/gateway/unseenAcquires';
import { AcquireLine, AcquireTicket, type ReadAnswer } from '../../src/cluster/gateway/acquireLine';
import { Membership } from '../../src/cluster/gateway/membership';
import { clusterTargets, gatewayHealth } from '../../src/cluster/gateway/gatewayHealth';
import type { NodeRecord } from '../../src/cluster/clusterStore';
import { newSessionId, setIdPrefix } from '../../src/common/ids';

const TOKEN = 'a-cluster-secret-of-some-length';

function record(nodeId: string, available: number, extra: Partial<NodeRecord> = {}): NodeRecord {
  return {
    node_id: nodeId,
    incarnation: 'abcdef01',
    address: `http://10.0.0.${nodeId.length}:8180`,
    health: 'healthy',
    pools: { default: { total: 4, available, in_use: 4 - available, cleaning: 0, broken: 0 } },
    healthy_containers: 1,
    unhealthy_containers: 0,
    heartbeat_at_ms: 0,
    ...extra,
  };
}

describe('cluster configuration', () => {
  test('standalone by default, reading none of the cluster variables', () => {
    const config = loadConfig({ BROKER_CLUSTER_TOKEN: 'short', BROKER_NODE_ID: 'Not.Valid' });
    expect(config.cluster.role).toBe('standalone');
  });

  test('a node and a gateway need the store and a cluster token of 16 characters or more', () => {
    expect(() => loadConfig({ BROKER_ROLE: 'node', BROKER_CLUSTER_TOKEN: TOKEN })).toThrow(/BROKER_ETCD_ENDPOINTS/);
    expect(() => loadConfig({ BROKER_ROLE: 'gateway', BROKER_ETCD_ENDPOINTS: 'http://127.0.0.1:2379', BROKER_CLUSTER_TOKEN: 'short' })).toThrow(/BROKER_CLUSTER_TOKEN/);
    expect(() => loadConfig({ BROKER_ROLE: 'leader' })).toThrow(ConfigError);
    const config = loadConfig({ BROKER_ROLE: 'node', BROKER_NODE_ID: 'n-7', BROKER_ETCD_ENDPOINTS: 'http://a:2379, http://b:2379', BROKER_CLUSTER_TOKEN: TOKEN, BROKER_NODE_ADDRESS: 'http://10.1.2.3:8180/' });
    expect(config.cluster).toMatchObject({ role: 'node', nodeId: 'n-7', etcdEndpoints: ['http://a:2379', 'http://b:2379'], nodeAddress: 'http://10.1.2.3:8180', nodeTtlSeconds: 5, heartbeatMs: 1000 });
  });

  test('a node id fits in an id before its dot; a heartbeat must come twice per TTL', () => {
    const base = { BROKER_ROLE: 'node', BROKER_ETCD_ENDPOINTS: 'http://a:2379', BROKER_CLUSTER_TOKEN: TOKEN };
    expect(() => loadConfig({ ...base, BROKER_NODE_ID: 'n1.a' })).toThrow(/BROKER_NODE_ID/);
    expect(() => loadConfig({ ...base, BROKER_NODE_ID: 'n1', BROKER_NODE_TTL: '2', BROKER_NODE_HEARTBEAT: '1.5' })).toThrow(/BROKER_NODE_HEARTBEAT/);
    expect(nodeIdOf('Web_01.Example')).toBe('web-01-example');
    expect(nodeIdOf('___')).toBe('node');
  });

  test('the store over TLS: https endpoints only, readable files, a certificate with its key, nothing of TLS over http', () => {
    const file = __filename;
    const base = { BROKER_ROLE: 'gateway', BROKER_CLUSTER_TOKEN: TOKEN };
    const https = { ...base, BROKER_ETCD_ENDPOINTS: 'https://a:2379,https://b:2379' };
    expect(loadConfig({ ...base, BROKER_ETCD_ENDPOINTS: 'http://a:2379' }).cluster.etcdTls).toBeNull();
    expect(loadConfig(https).cluster.etcdTls).toEqual({ caFile: null, certFile: null, keyFile: null });
    expect(loadConfig({ ...https, BROKER_ETCD_CA: file, BROKER_ETCD_CERT: file, BROKER_ETCD_KEY: file }).cluster.etcdTls).toEqual({ caFile: file, certFile: file, keyFile: file });
    expect(() => loadConfig({ ...base, BROKER_ETCD_ENDPOINTS: 'https://a:2379,http://b:2379' })).toThrow(/all https:\/\/ \(TLS\) or all http:\/\//);
    expect(() => loadConfig({ ...https, BROKER_ETCD_CERT: file })).toThrow(/BROKER_ETCD_CERT and BROKER_ETCD_KEY go together/);
    expect(() => loadConfig({ ...https, BROKER_ETCD_CA: '/no/such/ca.pem' })).toThrow(/BROKER_ETCD_CA names a file this process cannot read: '\/no\/such\/ca.pem'/);
    expect(() => loadConfig({ ...base, BROKER_ETCD_ENDPOINTS: 'http://a:2379', BROKER_ETCD_CA: file })).toThrow(/are for https:\/\/ endpoints/);
    // A standalone broker reads none of them.
    expect(loadConfig({ BROKER_ETCD_CA: '/no/such/ca.pem' }).cluster.etcdTls).toBeNull();
  });

  test('gateways and nodes over TLS: all three files or none, readable, and a node address of the matching scheme', () => {
    const file = __filename;
    const base = { BROKER_ROLE: 'node', BROKER_ETCD_ENDPOINTS: 'http://a:2379', BROKER_CLUSTER_TOKEN: TOKEN };
    const all = { BROKER_CLUSTER_CA: file, BROKER_CLUSTER_CERT: file, BROKER_CLUSTER_KEY: file };
    expect(loadConfig(base).cluster.clusterTls).toBeNull();
    expect(loadConfig({ ...base, ...all }).cluster.clusterTls).toEqual({ caFile: file, certFile: file, keyFile: file });
    expect(() => loadConfig({ ...base, ...all, BROKER_CLUSTER_KEY: ' ' })).toThrow(/go together \(mutual TLS between gateways and nodes\): BROKER_CLUSTER_KEY is missing; set all three, or none for plain HTTP/);
    expect(() => loadConfig({ ...base, BROKER_CLUSTER_CA: file })).toThrow(/BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY are missing/);
    expect(() => loadConfig({ ...base, ...all, BROKER_CLUSTER_CERT: '/no/such.crt' })).toThrow(/BROKER_CLUSTER_CERT names a file this process cannot read/);
    expect(() => loadConfig({ ...base, ...all, BROKER_NODE_ADDRESS: 'http://10.0.0.5:8180' })).toThrow(/BROKER_NODE_ADDRESS must be https:\/\/ \(BROKER_CLUSTER_CA, BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY are set/);
    expect(() => loadConfig({ ...base, BROKER_NODE_ADDRESS: 'https://10.0.0.5:8180' })).toThrow(/BROKER_NODE_ADDRESS must be http:\/\/ \(without BROKER_CLUSTER_CA/);
    expect(loadConfig({ ...base, ...all, BROKER_NODE_ADDRESS: 'https://n1.cluster:8180' }).cluster.nodeAddress).toBe('https://n1.cluster:8180');
    // A standalone broker reads none of them.
    expect(loadConfig({ BROKER_CLUSTER_CA: file }).cluster.clusterTls).toBeNull();
  });
});

describe('ids that name their node', () => {
  afterEach(() => setIdPrefix(''));

  test('a node prefixes every session id it mints; a standalone broker mints 32 hex digits', () => {
    expect(newSessionId()).toMatch(/^[0-9a-f]{32}$/);
    const owner = { nodeId: 'n-2', incarnation: newIncarnation() };
    setIdPrefix(idPrefixOf(owner));
    const id = newSessionId();
    expect(id).toMatch(/^n-2\.[0-9a-f]{8}\.[0-9a-f]{32}$/);
    expect(ownerOfId(id)).toEqual(owner);
    expect(ownerOfId('0123456789abcdef0123456789abcdef')).toBeNull();
  });
});

describe('placement: the best of 3 random nodes', () => {
  const none = (): number => 0;

  test('takes the node with the most free sessions among those drawn; with 3 or fewer, every one is drawn', () => {
    const nodes = [record('a', 1), record('b', 3), record('c', 2)];
    for (let i = 0; i < 20; i++) expect(placeAcquire({ nodes, pool: 'default', exclude: new Set(), inFlight: none })).toEqual({ node: nodes[1], free: true });
  });

  test('never picks an unhealthy node, a tried one, or one without the pool', () => {
    const nodes = [record('a', 4, { health: 'unhealthy' }), record('b', 4), record('c', 4, { pools: {} })];
    expect(placeAcquire({ nodes, pool: 'default', exclude: new Set(), inFlight: none })?.node.node_id).toBe('b');
    expect(placeAcquire({ nodes, pool: 'default', exclude: new Set(['b']), inFlight: none })).toBeNull();
    expect(placeAcquire({ nodes, pool: 'gpu', exclude: new Set(), inFlight: none })).toBeNull();
  });

  test("subtracts the gateway's unseen acquires; when none is free, waits on the largest pool", () => {
    const nodes = [record('a', 2), record('b', 1)];
    expect(placeAcquire({ nodes, pool: 'default', exclude: new Set(), inFlight: (id) => (id === 'a' ? 2 : 0) })).toEqual({ node: nodes[1], free: true });
    const full = [record('a', 0), record('b', 0, { pools: { default: { total: 8, available: 0, in_use: 8, cleaning: 0, broken: 0 } } })];
    expect(placeAcquire({ nodes: full, pool: 'default', exclude: new Set(), inFlight: none })).toEqual({ node: full[1], free: false });
  });

  test("takes the acquires waiting in a node's queue from its free sessions: a node that frees wins over one whose queue is longer", () => {
    const queued = (nodeId: string, available: number, waiting: number, total = 4): NodeRecord =>
      record(nodeId, available, { pools: { default: { total, available, in_use: total - available, cleaning: 0, broken: 0, waiting } } });
    // a shows 3 free but 3 acquires wait for them; b has 1 free and no queue.
    const nodes = [queued('a', 3, 3), queued('b', 1, 0)];
    expect(placeAcquire({ nodes, pool: 'default', exclude: new Set(), inFlight: none })).toEqual({ node: nodes[1], free: true });
    // Nobody free: the queue with the fewest acquires ahead per session, whatever the sizes.
    const full = [queued('a', 0, 2, 4), queued('b', 0, 6, 8), queued('c', 0, 0, 2)];
    expect(placeAcquire({ nodes: full, pool: 'default', exclude: new Set(), inFlight: none })).toEqual({ node: full[2], free: false });
    expect(placeAcquire({ nodes: full, pool: 'default', exclude: new Set(), inFlight: (id) => (id === 'c' ? 2 : 0) })).toEqual({ node: full[0], free: false });
    // A record without the field (an earlier node) reads as no queue.
    expect(placeAcquire({ nodes: [record('a', 1)], pool: 'default', exclude: new Set(), inFlight: none })).toEqual({ node: record('a', 1), free: true });
  });

  test('spreads over a large cluster: 3 draws out of 50 equal nodes land everywhere', () => {
    const nodes = Array.from({ length: 50 }, (_, i) => record(`n${i}`, 4));
    const picked = new Set<string>();
    for (let i = 0; i < 500; i++) picked.add(placeAcquire({ nodes, pool: 'default', exclude: new Set(), inFlight: none })!.node.node_id);
    expect(picked.size).toBeGreaterThan(40);
  });
});

test('unseen acquires: in flight, and granted after the record the gateway saw', () => {
  const unseen = new UnseenAcquires();
  unseen.begin('a');
  unseen.begin('a');
  expect(unseen.count('a', 0)).toBe(2);
  unseen.end('a', true);
  unseen.end('a', false);
  const grantedAt = Date.now();
  expect(unseen.count('a', grantedAt - 10_000)).toBe(1);
  // A record seen after the grant counts it already.
  expect(unseen.count('a', grantedAt + 10_000)).toBe(0);
  expect(unseen.count('b', 0)).toBe(0);
  // An acquire sent before the record the gateway saw is in that record (its queue, or in use).
  unseen.begin('c');
  expect(unseen.count('c', Date.now() + 10_000)).toBe(0);
  expect(unseen.count('c', Date.now() - 10_000)).toBe(1);
});

describe("a gateway's line of waiting acquires", () => {
  const node = record('a', 0);
  const granted = (text: string): ReadAnswer => ({ statusCode: 200, headers: {}, text, node });
  const far = (): number => Date.now() + 60_000;

  test("a grant goes to the oldest acquire of its kind, and the one it was working for takes over the oldest's worker", async () => {
    const line = new AcquireLine();
    const [first, second, other] = [new AcquireTicket('k', 'default', far()), new AcquireTicket('k', 'default', far()), new AcquireTicket('j', 'default', far())];
    for (const t of [first, second, other]) line.join(t);
    const firstWorker = first.worker.current;
    const secondWorker = second.worker.current;
    expect(line.grant(secondWorker, 'k', granted('{"session_id":"s1"}'))).toBe(true);
    expect(await first.outcome).toEqual({ kind: 'granted', read: granted('{"session_id":"s1"}') });
    expect(second.settled).toBe(false);
    expect(second.worker.current).toBe(firstWorker);
    expect(firstWorker.owner).toBe(second);
    expect(secondWorker.owner).toBeNull();
    expect(line.length).toBe(2);
    expect(line.grant(firstWorker, 'k', granted('{"session_id":"s2"}'))).toBe(true);
    expect((await second.outcome).kind).toBe('granted');
    // Nobody of kind k waits any more: the next grant of that kind is given back by the caller.
    expect(line.grant(firstWorker, 'k', granted('{"session_id":"s3"}'))).toBe(false);
    expect(line.length).toBe(1);
    expect(other.settled).toBe(false);
  });

  test("an acquire that leaves stops its worker; a grant to a worker nobody waits for goes to the oldest, whose own worker is stopped", async () => {
    const line = new AcquireLine();
    const [gone, waiting] = [new AcquireTicket('k', 'default', far()), new AcquireTicket('k', 'default', far())];
    line.join(gone);
    line.join(waiting);
    const orphan = gone.worker.current;
    const cuts: string[] = [];
    // A cutter that cannot reach its node closes the call instead.
    const cut = orphan.nextCall((abort) => {
      cuts.push('gone');
      abort();
    });
    line.leave(gone, { kind: 'exhausted', retryAfter: '1' });
    expect(cuts).toEqual(['gone']);
    expect(cut.aborted).toBe(true);
    expect(orphan.owner).toBeNull();
    const spare = waiting.worker.current;
    // A cutter its node answers: the call is left to end (the node ended it, or its grant is on the way).
    const spareCall = spare.nextCall(() => cuts.push('spare'));
    expect(line.grant(orphan, 'k', granted('{"session_id":"s1"}'))).toBe(true);
    expect((await waiting.outcome).kind).toBe('granted');
    expect(cuts).toEqual(['gone', 'spare']);
    expect(spareCall.aborted).toBe(false);
    // Cut once only.
    spare.stop();
    expect(cuts).toEqual(['gone', 'spare']);
    expect(line.length).toBe(0);
  });

  test('a worker whose answer came, or whose call went to a node that looked free, is not cut: its grant is handed on or given back', () => {
    for (const [cuttable, answered] of [
      [true, true],
      [false, false],
    ]) {
      const line = new AcquireLine();
      const ticket = new AcquireTicket('k', 'default', far());
      line.join(ticket);
      const worker = ticket.worker.current;
      let cuts = 0;
      const cutter = (abort: () => void): void => {
        cuts++;
        abort();
      };
      const call = worker.nextCall(cuttable ? cutter : null);
      if (answered) worker.answered();
      line.leave(ticket, { kind: 'exhausted', retryAfter: '1' });
      expect(call.aborted).toBe(false);
      expect(cuts).toBe(0);
      expect(line.grant(worker, 'k', granted('{"session_id":"s1"}'))).toBe(false);
    }
  });

  test('an acquire alone of its kind (a request_id) gets its own worker\'s grant only', async () => {
    const line = new AcquireLine();
    const alone = new AcquireTicket(null, 'default', far());
    line.join(alone);
    expect(line.length).toBe(0);
    expect(line.grant(alone.worker.current, null, granted('{"session_id":"s1"}'))).toBe(true);
    expect((await alone.outcome).kind).toBe('granted');
  });
});

test("a gateway's /health: the pool API's fields over the default pools, every pool's totals, each node; degraded without the store", () => {
  const membership = new Membership();
  expect(gatewayHealth(membership).status).toBe('unhealthy');
  membership.upsert(record('a', 3));
  membership.upsert(record('b', 1, { health: 'degraded', pools: { default: { total: 4, available: 1, in_use: 2, cleaning: 0, broken: 1 }, gpu: { total: 2, available: 2, in_use: 0, cleaning: 0, broken: 0 } } }));
  const report = gatewayHealth(membership);
  expect(report).toMatchObject({ status: 'degraded', total_sessions: 8, available_sessions: 4, in_use_sessions: 3, broken_sessions: 1, healthy_containers: 2, store_connected: true });
  expect(report.pools.gpu).toEqual({ total: 2, available: 2, in_use: 0, cleaning: 0, broken: 0, waiting: 0 });
  expect(report.nodes.map((n) => n.node_id)).toEqual(['a', 'b']);
  membership.remove('b');
  expect(gatewayHealth(membership).status).toBe('healthy');
  membership.connection(false);
  expect(gatewayHealth(membership)).toMatchObject({ status: 'degraded', store_connected: false });
  expect(clusterTargets(membership)).toEqual([{ targets: ['10.0.0.1:8180'], labels: { node: 'a', __scheme__: 'http' } }]);
});
