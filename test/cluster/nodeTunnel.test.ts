/**
 * A gateway's WebSocket tunnel (cluster/gateway/nodeTunnel.ts) between a real `ws` client and a real
 * `ws` server standing for a node, over loopback: the handshake reaches the node with the cluster
 * token in place of the client's, messages pass both ways, a refusal comes back as the node wrote
 * it, and a close on either side closes the other.
 * @backend any
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { tunnelUpgrade, type TunnelOutcome } from '../../src/cluster/gateway/nodeTunnel';

const TOKEN = 'cluster-token-of-the-tunnel-test';

interface Rig {
  gatewayUrl: string;
  /** The node's side of each accepted socket, and the headers its handshake came with. */
  accepted: Array<{ socket: WebSocket; headers: http.IncomingHttpHeaders }>;
  statuses: number[];
  close(): Promise<void>;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function rig(): Promise<Rig> {
  const accepted: Rig['accepted'] = [];
  const statuses: number[] = [];
  const wss = new WebSocketServer({ noServer: true });
  const node = http.createServer();
  node.on('upgrade', (req, socket: Duplex, head) => {
    if (req.url === '/refused') return void socket.end('HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 21\r\nConnection: close\r\n\r\n{"code":"not_found"}\n');
    wss.handleUpgrade(req, socket, head, (ws) => accepted.push({ socket: ws, headers: req.headers }));
  });
  const nodeUrl = await listen(node);
  const gateway = http.createServer();
  gateway.on('upgrade', (req, socket: Duplex, head) => void tunnelUpgrade(nodeUrl, req, socket, head, { token: TOKEN, tls: null }, (s) => statuses.push(s)));
  const gatewayUrl = await listen(gateway);
  return {
    gatewayUrl,
    accepted,
    statuses,
    async close() {
      for (const c of wss.clients) c.terminate();
      node.closeAllConnections();
      gateway.closeAllConnections();
      await Promise.all([new Promise((r) => node.close(r)), new Promise((r) => gateway.close(r))]);
    },
  };
}

function opened(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function nextMessage(ws: WebSocket): Promise<string> {
  return new Promise((resolve) => ws.once('message', (data: Buffer) => resolve(data.toString('utf8'))));
}

function closed(ws: WebSocket): Promise<number> {
  return new Promise((resolve) => ws.once('close', (code: number) => resolve(code)));
}

async function until(probe: () => boolean): Promise<void> {
  while (!probe()) await new Promise((r) => setTimeout(r, 5));
}

describe("a gateway's WebSocket tunnel to a node", () => {
  let r: Rig;
  beforeEach(async () => (r = await rig()));
  afterEach(async () => r.close());

  test('the handshake carries the cluster token (not a forged one); messages pass both ways', async () => {
    const client = await opened(`${r.gatewayUrl.replace('http', 'ws')}/ws/workspace?since=3`, { 'x-broker-cluster-token': 'forged', authorization: 'Bearer client' });
    await until(() => r.accepted.length === 1);
    const [{ socket: node, headers }] = r.accepted;
    expect(headers['x-broker-cluster-token']).toBe(TOKEN);
    expect(headers.authorization).toBe('Bearer client');
    expect(r.statuses).toEqual([101]);
    const toNode = nextMessage(node);
    client.send('keys');
    expect(await toNode).toBe('keys');
    const toClient = nextMessage(client);
    node.send('output');
    expect(await toClient).toBe('output');
    client.close();
  });

  test("the node's refusal reaches the client as the node wrote it", async () => {
    const ws = new WebSocket(`${r.gatewayUrl.replace('http', 'ws')}/refused`);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      ws.once('open', () => reject(new Error('the upgrade was accepted')));
    });
    expect(answer).toEqual({ status: 404, body: '{"code":"not_found"}\n' });
  });

  test("the client's close closes the node's side, with its code", async () => {
    const client = await opened(`${r.gatewayUrl.replace('http', 'ws')}/x`);
    await until(() => r.accepted.length === 1);
    const nodeClosed = closed(r.accepted[0].socket);
    client.close(4001, 'bye');
    expect(await nodeClosed).toBe(4001);
  });

  test("the node's close closes the client's side; a node that dies cuts it", async () => {
    const a = await opened(`${r.gatewayUrl.replace('http', 'ws')}/a`);
    const b = await opened(`${r.gatewayUrl.replace('http', 'ws')}/b`);
    await until(() => r.accepted.length === 2);
    const aClosed = closed(a);
    r.accepted[0].socket.close(4002, 'ended');
    expect(await aClosed).toBe(4002);
    const bClosed = closed(b);
    r.accepted[1].socket.terminate();
    expect(await bClosed).toBe(1006);
  });

  test('a node that takes no connection leaves the client socket to the caller', async () => {
    const server = http.createServer();
    const dead = await listen(server);
    await new Promise((resolve) => server.close(resolve));
    const outcome = await new Promise<TunnelOutcome>((resolve) => {
      const gateway = http.createServer();
      gateway.on('upgrade', (req, socket: Duplex, head) => {
        void tunnelUpgrade(dead, req, socket, head, { token: TOKEN, tls: null }, () => undefined).then((o) => {
          socket.destroy();
          gateway.close();
          resolve(o);
        });
      });
      void listen(gateway).then((url) => new WebSocket(url.replace('http', 'ws')).on('error', () => undefined));
    });
    expect(outcome).toEqual({ kind: 'notSent' });
  });
});
