/**
 * A gateway routes every contract route (src/api/contracts.ts) exactly as its contract says, and
 * serves nothing the contracts lack. The gateway's routers (gatewayRouters, which the gateway serves
 * with) are mounted on a real seam and server (port 0), their handlers replaced by recorders that
 * answer where the call went: each contract route is called on a concrete path (WebSockets as
 * upgrades) and must reach its own route, with its destination and the id it is routed by, its
 * guard, and its API's error format; a node's own route is answered as no route. The real Gateway
 * builds (it has its own answer for every route of destination `gateway`) and serves the same table.
 * @backend any
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { API_CONTRACTS } from '../../src/api/contracts';
import { contractKey, contractOf, destinationOf, isPublic, routingParam, type RouteContract } from '../../src/http/contract';
import { ERROR_FORMATS } from '../../src/http/errorFormats';
import { createAuthorize } from '../../src/http/auth';
import { HttpSeam } from '../../src/http/seam';
import { poolErrorFormat } from '../../src/http/errorFormats';
import { gatewayRouters, type GatewayHandlers, type Handle, type RelayUpgrade } from '../../src/cluster/gateway/gatewayRoutes';
import { Gateway } from '../../src/cluster/gateway/gateway';
import { loadConfig } from '../../src/config/config';
import type { ClusterStore } from '../../src/cluster/clusterStore';
import type { Router } from '../../src/http/router';

const TOKEN = 'gateway-routes-test-token';
/** An id a node minted: the node `n1`, incarnation 0badcafe. */
const ID = 'n1.0badcafe.00ff00ff00ff00ff00ff00ff00ff00ff';

interface Went {
  to: string;
  id?: string | null;
  kind?: string;
  path?: string;
  own?: string;
}

const answer = (went: Went): Handle => async ({ res }) => {
  const body = JSON.stringify(went);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
};

/** Handlers that answer where each call went, as a gateway's would send it. */
const RECORDERS: GatewayHandlers = {
  forward: (to, idParam) => async (ctx) => answer({ to, id: idParam === null ? null : ctx.params[idParam] })(ctx),
  tunnel: (to, idParam): RelayUpgrade => async (_req, socket, _head, ctx) => {
    const body = JSON.stringify({ to, id: idParam === null ? null : ctx.params[idParam] });
    socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  },
  acquire: (path) => answer({ to: 'acquire', path }),
  create: () => answer({ to: 'create' }),
  warmImages: () => answer({ to: 'warm-images' }),
  list: (kind) => answer({ to: 'list', kind }),
  own: (contract) => answer({ to: 'gateway', own: contractKey(contract) }),
};

/** What a contract says the recorders answer. */
function expected(contract: RouteContract, to: string): Went {
  switch (to) {
    case 'id':
      return { to, id: ID };
    case 'home':
    case 'any':
      return { to, id: null };
    case 'acquire':
      return { to, path: contract.path };
    case 'create':
    case 'warm-images':
      return { to };
    case 'gateway':
      return { to, own: contractKey(contract) };
    default:
      return { to: 'list', kind: to.slice('list-'.length) };
  }
}

/** A concrete path of `contract`: the routing id for its first parameter, a plain word for the others, two segments for a rest. */
function concrete(contract: RouteContract): string {
  const first = routingParam(contract);
  return contract.path.replace(/\/([:*])([A-Za-z_]\w*)/g, (_m, kind: string, name: string) => {
    if (kind === '*') return '/rest/of';
    return `/${name === first ? ID : `p-${name}`}`;
  });
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: Record<string, unknown>;
}

function call(url: string, method: string, path: string, token: boolean): Promise<Reply> {
  const webSocket = method === 'WS';
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${TOKEN}` } : {};
  if (webSocket) Object.assign(headers, { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' });
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method: webSocket ? 'GET' : method, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text ? JSON.parse(text) : {} }));
    });
    req.on('upgrade', () => reject(new Error(`${method} ${path} was upgraded`)));
    req.on('error', reject);
    req.end();
  });
}

describe("a gateway's routes are its contracts'", () => {
  const routers = gatewayRouters(RECORDERS, { metricsPublic: false });
  const contracts = API_CONTRACTS.flatMap((api) => Object.values(api.routes).map((contract) => ({ api, contract, to: destinationOf(api, contract) })));
  let server: http.Server;
  let url: string;

  beforeAll(async () => {
    const seam = new HttpSeam(routers, { authorize: createAuthorize(TOKEN), maxBodyBytes: 1 << 20, defaultErrors: poolErrorFormat });
    server = http.createServer(seam.serveRequest);
    server.on('upgrade', seam.serveUpgrade);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('routes every contract route where its contract says, by the id of its first path parameter', async () => {
    const wrong: unknown[] = [];
    for (const { contract, to } of contracts.filter((c) => c.to !== 'node')) {
      const path = concrete(contract);
      const r = await call(url, contract.method, path, true);
      const want = expected(contract, to);
      if (r.status !== 200 || JSON.stringify(r.json) !== JSON.stringify(want)) wrong.push({ route: contractKey(contract), path, status: r.status, got: r.json, want });
    }
    expect(wrong).toEqual([]);
    expect(contracts.filter((c) => c.to !== 'node').length).toBeGreaterThan(140);
  });

  it('guards each route as its contract does, and answers its refusals in its API\'s error format', async () => {
    const wrong: unknown[] = [];
    for (const { api, contract } of contracts.filter((c) => c.to !== 'node')) {
      const r = await call(url, contract.method, concrete(contract), false);
      const open = isPublic(contract, { metricsPublic: false });
      const format = api.errors === 'pool' ? { code: 'unauthorized' } : { code: 'UNAUTHORIZED' };
      const ok = open ? r.status === 200 : r.status === 401 && r.json.code === format.code && ('detail' in r.json) === (api.errors === 'pool');
      if (!ok) wrong.push({ route: contractKey(contract), public: open, status: r.status, body: r.json });
    }
    expect(wrong).toEqual([]);
    for (const router of routers) {
      for (const route of [...router.routes, ...(router.upgrades ?? [])]) {
        const api = API_CONTRACTS.find((a) => Object.values(a.routes).includes(contractOf(route)!))!;
        expect({ route: contractKey(contractOf(route)!), errors: router.errors, pathPrefix: router.pathPrefix }).toEqual({ route: contractKey(contractOf(route)!), errors: ERROR_FORMATS[api.errors], pathPrefix: api.pathPrefix });
      }
    }
  });

  it("serves a node's own routes to no client: they are answered as calls to no route", async () => {
    const own = contracts.filter((c) => c.to === 'node');
    expect(own.map((c) => contractKey(c.contract))).toEqual(['POST /cluster/acquires/:tag/cut', 'POST /images/check']);
    for (const { contract } of own) {
      const r = await call(url, contract.method, concrete(contract), true);
      expect({ status: r.status, body: r.json }).toEqual({ status: 404, body: { detail: `Not Found: POST ${concrete(contract)}`, code: 'route_not_found' } });
    }
  });

  it('has nothing the contracts lack, and takes no body it relays', () => {
    const all = contracts.map((c) => c.contract);
    const served = routers.flatMap((r: Router) => [...r.routes, ...(r.upgrades ?? [])]);
    expect(served.filter((route) => !all.includes(contractOf(route)!))).toEqual([]);
    expect(served.length).toBe(contracts.filter((c) => c.to !== 'node').length);
    expect(routers.flatMap((r) => r.routes).filter((route) => route.body !== undefined)).toEqual([]);
  });

  it('sends what a client names as the contracts do (examples)', async () => {
    const where = async (method: string, path: string): Promise<Went> => (await call(url, method, path, true)).json as unknown as Went;
    for (const [method, path] of [
      ['POST', `/session/${ID}/execute`],
      ['POST', `/sandboxes/${ID}/execd/command`],
      ['WS', `/sandboxes/${ID}/port/8080/socket`],
      ['DELETE', `/v1/sandboxes/${ID}`],
      ['WS', `/workspaces/${ID}/ws/workspace/terminal`],
      ['GET', `/sandboxes/${ID}/stream/coding`],
      ['POST', `/groups/${ID}/sandboxes/s1/execute`],
      ['POST', `/admin/leases/${ID}/release`],
      ['POST', `/session/${ID}/fork`],
      ['DELETE', `/snapshots/${ID}`],
      ['GET', `/v1/snapshots/${ID}`],
      ['DELETE', `/v1/snapshots/${ID}`],
    ]) {
      expect({ method, path, went: await where(method, path) }).toEqual({ method, path, went: { to: 'id', id: ID } });
    }
    expect(await where('POST', '/session/acquire_group/')).toEqual({ to: 'acquire', path: '/session/acquire_group' });
    expect(await where('GET', '/v1/sandboxes?state=Running')).toEqual({ to: 'list', kind: 'lifecycle' });
    expect(await where('POST', '/images')).toEqual({ to: 'warm-images' });
    expect(await where('GET', '/images')).toEqual({ to: 'list', kind: 'images' });
    // A snapshot lives on its node: every node's are listed.
    expect(await where('GET', '/snapshots')).toEqual({ to: 'list', kind: 'snapshots' });
    expect(await where('GET', '/v1/snapshots?state=Ready')).toEqual({ to: 'list', kind: 'lifecycle-snapshots' });
    for (const [method, path] of [['POST', '/api/execute'], ['WS', '/ws/workspace'], ['POST', '/sandbox/start'], ['WS', '/admin/live']]) {
      expect({ method, path, went: await where(method, path) }).toEqual({ method, path, went: { to: 'home', id: null } });
    }
    expect((await call(url, 'HEAD', '/health', false)).status).toBe(200);
    expect((await call(url, 'GET', '/no/such/route', true)).status).toBe(404);
    expect((await call(url, 'GET', '/session/%E0%A4%A/history', true)).json).toEqual({ detail: "session id '%E0%A4%A' is not valid percent-encoding", code: 'bad_request' });
  });

  it('is the table the gateway serves, with its own answer for every route of its own', () => {
    const standIn = new Proxy({}, { get: () => () => Promise.reject(new Error('the store is not asked while the gateway is built')) }) as ClusterStore;
    const config = loadConfig({ BROKER_ROLE: 'gateway', BROKER_ETCD_ENDPOINTS: 'http://127.0.0.1:1', BROKER_CLUSTER_TOKEN: 'a-cluster-secret-of-some-length', BROKER_TOKEN: TOKEN });
    const gateway = new Gateway(config, standIn);
    const keys = (list: { method: string; path: string; public: boolean }[]): string[] => list.map((r) => `${r.method} ${r.path} ${r.public}`).sort();
    const seam = new HttpSeam(routers, { authorize: createAuthorize(TOKEN), maxBodyBytes: 1, defaultErrors: poolErrorFormat });
    expect(keys(gateway.seam.routeList())).toEqual(keys(seam.routeList()));
  });
});
