/**
 * A gateway's placement of acquires, against nodes that answer what each test needs: real HTTP
 * servers on port 0 standing in for node brokers, a real gateway, and an in-memory store (the etcd
 * adapter is the cluster suite's). Deterministic where the cluster suite cannot be: which node is
 * full when the facts say it is free, which one refuses connections, what the store holds.
 * @backend local
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config/config';
import { Gateway } from '../../src/cluster/gateway/gateway';
import type { ClusterStore, MembershipListener, NodeRecord } from '../../src/cluster/clusterStore';
import { CLUSTER_TOKEN_HEADER } from '../../src/cluster/node/clusterGuard';
import { call, closeClients } from '../../devtools/clusterProcs';
import { freePort } from '../../devtools/etcd';

const CLUSTER_TOKEN = 'fake-cluster-token-0123456789';

/** The store's placements in memory, and the membership a test hands the gateway. */
class MemoryStore implements ClusterStore {
  readonly placements = new Map<string, string>();
  readonly listeners: MembershipListener[] = [];
  register(): never {
    throw new Error('no node registers here');
  }
  async watchMembership(listener: MembershipListener) {
    this.listeners.push(listener);
    return { close: async () => undefined };
  }
  async placeOnce(key: string, nodeId: string): Promise<string> {
    if (!this.placements.has(key)) this.placements.set(key, nodeId);
    return this.placements.get(key)!;
  }
  async movePlacement(key: string, from: string, to: string): Promise<string> {
    if (this.placements.get(key) === from) this.placements.set(key, to);
    return this.placements.get(key)!;
  }
  async close(): Promise<void> {}
}

interface Seen {
  path: string;
  body: Record<string, unknown>;
  token: string | undefined;
}

/** A stand-in node: answers acquires with `answer`, records what it was sent. */
class FakeNode {
  readonly seen: Seen[] = [];
  answer: (body: Record<string, unknown>) => { status: number; body: unknown } = () => ({ status: 200, body: { session_id: `${this.id}.00000000.1` } });
  private server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      this.seen.push({ path: req.url ?? '', body, token: req.headers[CLUSTER_TOKEN_HEADER] as string | undefined });
      const { status, body: answer } = this.answer(body);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  });
  url = '';

  constructor(readonly id: string) {}

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  record(available: number): NodeRecord {
    return {
      node_id: this.id,
      incarnation: '00000000',
      address: this.url,
      health: 'healthy',
      pools: { default: { total: 4, available, in_use: 4 - available, cleaning: 0, broken: 0 } },
      healthy_containers: 1,
      unhealthy_containers: 0,
      heartbeat_at_ms: Date.now(),
    };
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

const EXHAUSTED = (body: Record<string, unknown>) => ({ status: 503, body: { detail: `No session available within ${body.acquire_timeout} seconds`, code: 'pool_exhausted' } });

let store: MemoryStore;
let gateways: Gateway[] = [];
let nodes: FakeNode[] = [];

async function startGateway(): Promise<string> {
  const config = loadConfig({ BROKER_ROLE: 'gateway', BROKER_ETCD_ENDPOINTS: 'http://127.0.0.1:1', BROKER_CLUSTER_TOKEN: CLUSTER_TOKEN, PORT: '0', BROKER_LOG_LEVEL: 'silent' });
  const gateway = new Gateway(config, store);
  const address = await gateway.start();
  gateways.push(gateway);
  return `http://127.0.0.1:${address.port}`;
}

function members(...records: NodeRecord[]): void {
  for (const r of records) for (const l of store.listeners) l.upsert(r);
}

beforeEach(() => {
  store = new MemoryStore();
});

afterEach(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await Promise.all(nodes.map((n) => n.close()));
  gateways = [];
  nodes = [];
});

afterAll(closeClients);

test('a node the facts call free but that answers 503 pool_exhausted after a short try: the next node serves the acquire', async () => {
  const [full, free] = (nodes = await Promise.all([new FakeNode('a').start(), new FakeNode('b').start()]));
  full.answer = EXHAUSTED;
  const url = await startGateway();
  members(full.record(3), free.record(1));
  const r = await call(url, 'POST', '/session/acquire', { acquire_timeout: 10, startup_commands: ['true'] });
  expect(r.status).toBe(200);
  expect(r.json).toEqual({ session_id: 'b.00000000.1' });
  // The full node had two heartbeats (2 s), the rest went to the next, the body otherwise as sent.
  expect(full.seen.map((s) => s.body)).toEqual([{ acquire_timeout: 2, startup_commands: ['true'] }]);
  expect(free.seen).toHaveLength(1);
  expect(free.seen[0].body.acquire_timeout as number).toBeLessThanOrEqual(10);
  expect(free.seen[0].body.startup_commands).toEqual(['true']);
  expect(new Set([...full.seen, ...free.seen].map((s) => s.token))).toEqual(new Set([CLUSTER_TOKEN]));
});

test('a node that refuses connections is passed over', async () => {
  nodes = [await new FakeNode('up').start()];
  const url = await startGateway();
  const dead = new FakeNode('dead');
  dead.url = `http://127.0.0.1:${await freePort()}`;
  members(dead.record(4), nodes[0].record(1));
  const r = await call(url, 'POST', '/session/acquire', {});
  expect(r.json).toEqual({ session_id: 'up.00000000.1' });
});

test("every node full: the answer is a standalone broker's 503, with the caller's timeout", async () => {
  nodes = await Promise.all([new FakeNode('a').start(), new FakeNode('b').start()]);
  for (const n of nodes) n.answer = EXHAUSTED;
  const url = await startGateway();
  members(nodes[0].record(1), nodes[1].record(1));
  const r = await call(url, 'POST', '/session/acquire', { acquire_timeout: 0.5 });
  expect(r.status).toBe(503);
  expect(r.text).toBe('{"detail":"No session available within 0.5 seconds","code":"pool_exhausted"}');
  expect(nodes.every((n) => n.seen.length === 1)).toBe(true);
});

test('a request_id is pinned to its node in the store, moves with the acquire, and a retry through another gateway follows it', async () => {
  const [a, b] = (nodes = await Promise.all([new FakeNode('a').start(), new FakeNode('b').start()]));
  a.answer = EXHAUSTED;
  const [g1, g2] = [await startGateway(), await startGateway()];
  members(a.record(3), b.record(1));
  const body = { request_id: 'episode-1', acquire_timeout: 10 };
  expect((await call(g1, 'POST', '/session/acquire', body)).json).toEqual({ session_id: 'b.00000000.1' });
  expect([...store.placements.values()]).toEqual(['b']);
  // The retry goes straight to b, though the facts still call a the freer node.
  const retry = await call(g2, 'POST', '/session/acquire', body);
  expect(retry.json).toEqual({ session_id: 'b.00000000.1' });
  expect(a.seen).toHaveLength(1);
  expect(b.seen.map((s) => s.body.request_id)).toEqual(['episode-1', 'episode-1']);
});

test('no node registered: 503 no_nodes; a pool no node serves: any node answers as a broker would', async () => {
  nodes = [await new FakeNode('a').start()];
  const url = await startGateway();
  const none = await call(url, 'POST', '/session/acquire', {});
  expect(none.status).toBe(503);
  expect(none.json.code).toBe('no_nodes');
  expect(none.headers['retry-after']).toBe('1');
  members(nodes[0].record(2));
  nodes[0].answer = () => ({ status: 400, body: { detail: "Unknown pool 'gpu'", code: 'unknown_pool' } });
  const unknown = await call(url, 'POST', '/session/acquire', { pool: 'gpu' });
  expect(unknown.status).toBe(400);
  expect(unknown.json.code).toBe('unknown_pool');
  expect(nodes[0].seen[0].body).toEqual({ pool: 'gpu' });
  // A timeout the gateway cannot rewrite reaches a node as it came, for the node's own 400.
  nodes[0].answer = () => ({ status: 400, body: { detail: "'acquire_timeout' must be a positive number of seconds, got -1", code: 'bad_request' } });
  const bad = await call(url, 'POST', '/session/acquire', { acquire_timeout: -1 });
  expect(bad.status).toBe(400);
  expect(nodes[0].seen[1].body).toEqual({ acquire_timeout: -1 });
});

test("nodes that cap the wait below the caller's acquire_timeout send the acquire back: it is placed again until one serves it", async () => {
  nodes = await Promise.all([new FakeNode('a').start(), new FakeNode('b').start()]);
  let calls = 0;
  // Each node waits only 0.1 s of what it is asked (its own acquire timeout), and serves the fifth call.
  for (const n of nodes) {
    n.answer = () => (++calls < 5 ? { status: 503, body: { detail: 'No session available within 0.1 seconds', code: 'pool_exhausted' } } : { status: 200, body: { session_id: `${n.id}.00000000.1` } });
  }
  const url = await startGateway();
  members(nodes[0].record(0), nodes[1].record(0));
  const r = await call(url, 'POST', '/session/acquire', { acquire_timeout: 30 });
  expect(r.status).toBe(200);
  expect(calls).toBe(5);
  // Told less than asked, the gateway does not give up: a node that answers its full wait ends it.
  for (const n of nodes) n.answer = EXHAUSTED;
  const full = await call(url, 'POST', '/session/acquire', { acquire_timeout: 0.5 });
  expect(full.text).toBe('{"detail":"No session available within 0.5 seconds","code":"pool_exhausted"}');
});
