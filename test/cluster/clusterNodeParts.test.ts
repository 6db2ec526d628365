/**
 * A node's own parts: the guard that admits only the cluster's calls (over a real server on port 0),
 * the heartbeat over a registration that fails and comes back, and a node's configuration on a
 * non-loopback address.
 * @backend any
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { clusterGuard } from '../../src/cluster/node/clusterGuard';
import { freedSince, imageKey, NodeHeartbeat } from '../../src/cluster/node/nodeHeartbeat';
import type { NodeRecord, NodeRegistration } from '../../src/cluster/clusterStore';
import { loadConfig } from '../../src/config/config';
import { eventually } from '../helpers/broker';

const TOKEN = 'the-cluster-secret-0123';

describe('the node guard', () => {
  let server: http.Server;
  let url: string;
  const wss = new WebSocketServer({ noServer: true });

  beforeAll(async () => {
    const guard = clusterGuard(TOKEN);
    server = http.createServer(guard.request((_req, res) => res.end('served')));
    server.on('upgrade', guard.upgrade((req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => ws.close())));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    wss.close();
    await new Promise((r) => server.close(r));
  });

  const get = async (path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; body: string }> => {
    const r = await fetch(url + path, { method, headers });
    return { status: r.status, body: await r.text() };
  };

  test('admits the cluster token in its header or as a bearer; refuses anything else in the pool format', async () => {
    expect(await get('/session/x/execute', { 'x-broker-cluster-token': TOKEN }, 'POST')).toEqual({ status: 200, body: 'served' });
    expect((await get('/metrics', { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    const refused = await get('/session/acquire', { authorization: 'Bearer a-client-token' }, 'POST');
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'unauthorized' });
    // The header, when present, decides: a right bearer beside a wrong header is refused.
    expect((await get('/metrics', { 'x-broker-cluster-token': 'wrong', authorization: `Bearer ${TOKEN}` })).status).toBe(401);
  });

  test('GET /health stays public, as on any broker; nothing else does', async () => {
    expect((await get('/health')).status).toBe(200);
    expect((await get('/health?x=1')).status).toBe(200);
    expect((await get('/health', {}, 'POST')).status).toBe(401);
    expect((await get('/healthz')).status).toBe(401);
  });

  test('a WebSocket without the cluster token is refused before its handshake', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`);
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => reject(new Error('opened')));
      ws.once('error', reject);
    });
    expect(status).toBe(401);
    const opened = await new Promise<boolean>((resolve) => {
      const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`, { headers: { 'x-broker-cluster-token': TOKEN } });
      ws.once('open', () => resolve(true));
      ws.once('error', () => resolve(false));
    });
    expect(opened).toBe(true);
  });
});

test('the heartbeat publishes every interval, rides out a store that refuses, and ends the registration on close', async () => {
  const published: number[] = [];
  let failing = false;
  let closed = 0;
  const registration: NodeRegistration = {
    async publish(record) {
      if (failing) throw new Error('store away');
      published.push(record.heartbeat_at_ms);
    },
    async close() {
      closed++;
    },
  };
  let beat = 0;
  const heartbeat = new NodeHeartbeat(registration, () => ({ heartbeat_at_ms: ++beat }) as NodeRecord, 10, () => ({}));
  await heartbeat.start();
  expect(published).toEqual([1]);
  await eventually(() => published.length >= 3, 5_000, 'three beats');
  failing = true;
  const before = beat;
  await eventually(() => beat >= before + 3, 5_000, 'beats tried while the store refuses');
  failing = false;
  const seen = published.length;
  await eventually(() => published.length > seen, 5_000, 'a beat taken once the store is back');
  await heartbeat.close();
  await heartbeat.close();
  expect(closed).toBe(1);
  const after = beat;
  await new Promise((r) => setTimeout(r, 50));
  expect(beat).toBe(after);
});

test('a node may listen beyond loopback without BROKER_TOKEN: the cluster token guards it; a gateway may not', () => {
  const cluster = { BROKER_ETCD_ENDPOINTS: 'http://10.0.0.1:2379', BROKER_CLUSTER_TOKEN: TOKEN, HOST: '0.0.0.0' };
  expect(loadConfig({ ...cluster, BROKER_ROLE: 'node', BROKER_NODE_ID: 'n1' }).cluster.role).toBe('node');
  expect(() => loadConfig({ ...cluster, BROKER_ROLE: 'gateway' })).toThrow(/BROKER_TOKEN/);
  expect(() => loadConfig({ HOST: '0.0.0.0' })).toThrow(/BROKER_TOKEN/);
});

test('a pool that was full and frees a session is published at once, not at the next beat', async () => {
  const published: NodeRecord[] = [];
  const registration: NodeRegistration = {
    async publish(record) {
      published.push(record);
    },
    async close() {},
  };
  let available = 0;
  let built = 0;
  const record = (): NodeRecord => {
    built++;
    return { heartbeat_at_ms: Date.now(), pools: { default: { total: 2, available, in_use: 2 - available, cleaning: 0, broken: 0, waiting: 0 } } } as unknown as NodeRecord;
  };
  // A beat an hour apart: only the freeing can publish before the test's end.
  const heartbeat = new NodeHeartbeat(registration, record, 3_600_000, () => ({ default: available }));
  try {
    await heartbeat.start();
    expect(published.map((r) => r.pools.default.available)).toEqual([0]);
    available = 1;
    await eventually(() => published.length === 2, 5_000, 'the freed pool published');
    expect(published[1].pools.default.available).toBe(1);
    // The looks between beats read the counts only: a record is built for each beat, no more.
    expect(built).toBe(2);
  } finally {
    await heartbeat.close();
  }
});

test('freedSince: a pool full in the last record and free now; nothing else', () => {
  const rec = (pools: Record<string, number>): NodeRecord => ({ pools: Object.fromEntries(Object.entries(pools).map(([p, available]) => [p, { available }])) }) as unknown as NodeRecord;
  expect(freedSince(rec({ default: 0 }), { default: 1 })).toBe(true);
  expect(freedSince(rec({ default: 0, big: 3 }), { default: 0, big: 2 })).toBe(false);
  expect(freedSince(rec({ default: 1 }), { default: 2 })).toBe(false);
  expect(freedSince(rec({}), { new: 1 })).toBe(false);
  expect(freedSince(null, { default: 1 })).toBe(false);
});

test('freedSince: an image the last record named with no warm session, warm now; not one it did not name in full', () => {
  const top = (warm: Record<string, number>) => Object.entries(warm).map(([image, w]) => ({ image, warm: w, leased: 1, containers: 1, held: true, uses: 3 }));
  const rec = (warm: Record<string, number>): NodeRecord => ({ pools: { default: { available: 2 } }, images: { top: top(warm), others: null } }) as unknown as NodeRecord;
  expect(freedSince(rec({ 'reg/a:1': 0 }), { default: 2, [imageKey('reg/a:1')]: 1 })).toBe(true);
  expect(freedSince(rec({ 'reg/a:1': 1 }), { default: 2, [imageKey('reg/a:1')]: 2 })).toBe(false);
  expect(freedSince(rec({ 'reg/a:1': 0 }), { default: 2, [imageKey('reg/a:1')]: 0 })).toBe(false);
  expect(freedSince(rec({}), { default: 2, [imageKey('reg/b:1')]: 1 })).toBe(false);
  expect(freedSince({ pools: {} } as unknown as NodeRecord, { [imageKey('reg/b:1')]: 1 })).toBe(false);
});
