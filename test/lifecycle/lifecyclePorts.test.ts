/**
 * A lifecycle sandbox's other ports (GET /v1/sandboxes/{id}/endpoints/{port}): once a service inside
 * the sandbox listens, its endpoint is the broker's proxy route, which carries HTTP (any method, path,
 * query, body) and WebSocket messages both ways and never passes the broker's token on; before, and
 * where the sandbox has no network, a 404 says why. The service is a real aiohttp server started
 * through the OpenSandbox SDK's commands.run; the clients are undici and ws.
 */
import net from 'node:net';
import path from 'node:path';
import { request } from 'undici';
import { WebSocket } from 'ws';
import { Sandbox, SandboxApiException } from '@alibaba-group/opensandbox';
import { startTestBroker, testBackend, eventually, type TestBroker } from '../helpers/broker';
import { findPython } from '../helpers/python';

const TOKEN = 'ports-test-token';
const SCRIPT = path.join(__dirname, '..', 'python', 'port_server.py');
const image = testBackend === 'docker' ? (process.env.BROKER_IMAGE ?? 'bash-broker-test:latest') : 'ports-image';
const { python, tried } = findPython();

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.once('error', reject);
  });
}

async function endpointError(sandbox: Sandbox, port: number): Promise<SandboxApiException> {
  const err = await sandbox.getEndpoint(port).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SandboxApiException);
  return err as SandboxApiException;
}

describe(`a sandbox's other ports (${testBackend})`, () => {
  let tb: TestBroker;
  let sandbox: Sandbox;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_TOKEN: TOKEN, BROKER_POOLS: JSON.stringify({ ports: { image, containers: 1 } }) });
    await eventually(async () => (await tb.get('/health')).json.pools.ports.available_sessions === 1, 120_000, 'the pool warm');
    sandbox = await Sandbox.create({ connectionConfig: { domain: tb.url, apiKey: TOKEN, disableMetrics: true }, image });
  });
  afterAll(async () => {
    await sandbox?.kill().catch(() => undefined);
    await sandbox?.close();
    await tb?.close();
  });

  if (testBackend === 'docker') {
    // The docker test project runs its containers without a network (BROKER_NETWORK_MODE=none).
    it('a container without a network has no endpoint for other ports: 404 saying so', async () => {
      const err = await endpointError(sandbox, 8080);
      expect({ status: err.statusCode, code: err.error.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
      expect(err.message).toBe(`Sandbox ${sandbox.id} is not reachable: its container has no network address (BROKER_NETWORK_MODE=none?)`);
    });
    return;
  }

  if (!python) {
    it('needs a python3 with aiohttp for the service inside the sandbox', () => {
      const missing = `no python interpreter can import aiohttp (apt-get install -y python3-aiohttp, or set PYTHON); tried ${tried.join('; ')}`;
      if (process.env.CI && process.env.CI !== 'false') throw new Error(`CI must run this suite: ${missing}`);
      console.warn(`lifecyclePorts.test.ts SKIPPED: ${missing}`);
    });
    return;
  }

  it('404 before anything listens; then HTTP and WebSocket through the proxy, without the broker token', async () => {
    const port = await freePort();
    const before = await endpointError(sandbox, port);
    expect(before.statusCode).toBe(404);
    expect(before.message).toBe(`Port ${port} of sandbox ${sandbox.id} has no endpoint: nothing listens on it (start the service first)`);

    await sandbox.commands.run(`${python} ${SCRIPT} ${port}`, { background: true });
    let endpoint = '';
    await eventually(
      async () => {
        endpoint = (await sandbox.getEndpoint(port).catch(() => ({ endpoint: '' }))).endpoint;
        return endpoint !== '';
      },
      60_000,
      'the service listening',
    );
    expect(endpoint).toBe(`${tb.url.replace('http://', '')}/sandboxes/${sandbox.id}/port/${port}`);

    const auth = { 'OPEN-SANDBOX-API-KEY': TOKEN };
    const get = await request(`http://${endpoint}/some/path?x=1&y=two`, { headers: auth });
    expect(get.statusCode).toBe(200);
    expect(await get.body.json()).toEqual({ method: 'GET', path: '/some/path', query: 'x=1&y=two', body: '', token_headers: [] });
    const post = await request(`http://${endpoint}/upload`, { method: 'POST', body: 'payload bytes', headers: { ...auth, Authorization: `Bearer ${TOKEN}` } });
    expect(await post.body.json()).toEqual({ method: 'POST', path: '/upload', query: '', body: 'payload bytes', token_headers: [] });
    const noToken = await request(`http://${endpoint}/x`);
    expect(noToken.statusCode).toBe(401);
    await noToken.body.dump();

    const ws = new WebSocket(`ws://${endpoint}/ws`, { headers: auth });
    const replies: string[] = [];
    ws.on('message', (data: Buffer, binary: boolean) => replies.push(binary ? `bin:${data.toString()}` : data.toString()));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send('hello');
    ws.send(Buffer.from('abc'), { binary: true });
    await eventually(() => replies.length === 2, 20_000, 'two echoes');
    expect(replies).toEqual(['echo:hello', 'bin:cba']);
    ws.close();
    await new Promise((resolve) => ws.once('close', resolve));
  });
});
