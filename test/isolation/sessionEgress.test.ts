/**
 * A session's egress rules (src/backends/docker/isolation/egressFilter.ts, sessionEgress.ts): an
 * allowed CIDR is reached and a refused one refused at once, naming the host:port in the execute's
 * facts; DNS names (a wildcard too) through the broker's resolver for the session, whose upstream is a
 * DNS server this test runs on its loopback; rules changed during the lease; bad rules a 400 in each
 * API's format that changes nothing. The servers are real: one on this host at the engine's bridge
 * gateway, one in a container of this test's on the bridge (another address). No timing is asserted:
 * a silent drop would hang bash's connect until the execute's timeout, whose answer differs.
 * @backend docker
 */
import Dockerode from 'dockerode';
import dgram from 'node:dgram';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually, startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { removeLabelledContainers } from '../helpers/dockerFaults';
import { LABEL_DEPLOYMENT } from '../../src/backends/docker/containers/labels';

const LONG = 120_000;
jest.setTimeout(300_000);
const docker = new Dockerode();
const PEER_PORT = 8080;

/** GET / by bash's own /dev/tcp: the body's last line, or bash's error (`No route to host`...). */
const fetch = (host: string, port: number): string => `(exec 3<>/dev/tcp/${host}/${port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && tail -n1 <&3) 2>&1 | sed 's/^.*: //'; true`;

async function bridgeGateway(): Promise<string> {
  const info = (await docker.getNetwork('bridge').inspect()) as { IPAM?: { Config?: { Gateway?: string }[] } };
  const gateway = info.IPAM?.Config?.[0]?.Gateway;
  if (!gateway) throw new Error("the engine's bridge network has no gateway");
  return gateway;
}

/**
 * A tiny DNS server on this host's loopback (the broker's upstream for its sessions' names): an A
 * record (TTL 60) for each name of `names`, NXDOMAIN for any other.
 */
async function dnsServer(names: Map<string, string>): Promise<{ socket: dgram.Socket; address: string; asked: string[] }> {
  const socket = dgram.createSocket('udp4');
  const asked: string[] = [];
  socket.on('message', (query, from) => {
    const labels: string[] = [];
    let at = 12;
    while (query[at]! > 0) {
      labels.push(query.toString('latin1', at + 1, at + 1 + query[at]!));
      at += 1 + query[at]!;
    }
    const end = at + 5;
    const name = labels.join('.').toLowerCase();
    asked.push(name);
    const type = query.readUInt16BE(at + 1);
    const address = names.get(name);
    const header = Buffer.from(query.subarray(0, end));
    header[2] = 0x84 | (query[2]! & 0x01);
    header[3] = address ? 0x80 : 0x83;
    header.writeUInt16BE(address && type === 1 ? 1 : 0, 6);
    header.writeUInt16BE(0, 8);
    header.writeUInt16BE(0, 10);
    const answer = address && type === 1 ? Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...address.split('.').map(Number)]) : Buffer.alloc(0);
    socket.send(Buffer.concat([header, answer]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, address: `127.0.0.1:${socket.address().port}`, asked };
}

describeDocker('docker per-session egress rules', () => {
  let tb: TestBroker | null = null;
  const deployment = testDeployment(`egr-${process.pid}`);
  let gateway = '';
  let hostServer: http.Server;
  let hostPort = 0;
  let peer = '';
  let dns: Awaited<ReturnType<typeof dnsServer>>;

  beforeAll(async () => {
    gateway = await bridgeGateway();
    hostServer = http.createServer((_req, res) => res.end('from-host\n'));
    await new Promise<void>((resolve) => hostServer.listen(0, gateway, resolve));
    hostPort = (hostServer.address() as AddressInfo).port;
    // A server at another address of the bridge: a container of this test's (BusyBox httpd).
    const c = await docker.createContainer({
      Image: 'bash-broker-test',
      Entrypoint: ['sh', '-c', `mkdir -p /w && echo from-peer >/w/index.html && exec httpd -f -p ${PEER_PORT} -h /w`],
      Labels: { [LABEL_DEPLOYMENT]: deployment },
      HostConfig: { NetworkMode: 'bridge', AutoRemove: false },
    });
    await c.start();
    peer = (await c.inspect()).NetworkSettings.Networks.bridge!.IPAddress;
    dns = await dnsServer(new Map([['allowed.test', gateway], ['a.wild.test', peer], ['wild.test', peer], ['other.test', peer]]));
  });

  afterEach(async () => {
    await tb?.close().catch(() => undefined);
    tb = null;
  });

  afterAll(async () => {
    hostServer?.close();
    dns?.socket.close();
    await removeLabelledContainers(docker, deployment);
  });

  async function broker(env: Record<string, string> = {}): Promise<TestBroker> {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '1', BROKER_NETWORK_MODE: 'bridge', BROKER_EGRESS_DNS: dns.address, ...env }));
    await b.waitAllAvailable(LONG);
    return b;
  }

  const putter = (b: TestBroker, s: string) => (body: unknown) => b.request('PUT', `/session/${s}/network`, JSON.stringify(body), { 'content-type': 'application/json' });

  it('an allowed CIDR is reached, a refused one refused at once and named in the facts; rules change during the lease', async () => {
    const b = await broker();
    const s = await b.acquire();
    const put = putter(b, s);
    const set = await put({ policy: 'none', egress: [{ action: 'allow', target: `${gateway}/32` }] });
    expect({ status: set.status, body: set.json }).toEqual({ status: 200, body: { session_id: s, policy: 'none', egress: [{ action: 'allow', target: `${gateway}/32` }] } });
    expect((await b.exec(s, fetch(gateway, hostPort))).stdout).toBe('from-host\n');
    const refused = await b.execFull(s, fetch(peer, PEER_PORT), 30);
    expect(refused.stdout).toMatch(/No route to host/);
    expect(refused.egress_refused).toBeGreaterThanOrEqual(1);
    expect(refused.egress_refused_to).toEqual([`${peer}:${PEER_PORT}`]);
    // A command that tries nothing names nothing (the refusals before it are not its own).
    expect(await b.execFull(s, 'true', 30)).toMatchObject({ egress_refused: 0, egress_refused_to: [] });
    // A neighbour of the same container has its pool's policy: its egress is not this session's.
    const neighbour = await b.acquire();
    expect((await b.exec(neighbour, fetch(peer, PEER_PORT))).stdout).toBe('from-peer\n');
    // Changed during the lease: the peer allowed and the host refused (a deny before a wider allow).
    expect((await put({ policy: 'full', egress: [{ action: 'deny', target: gateway }, { action: 'allow', target: '0.0.0.0/0' }] })).status).toBe(200);
    expect((await b.exec(s, fetch(peer, PEER_PORT))).stdout).toBe('from-peer\n');
    const now = await b.execFull(s, fetch(gateway, hostPort), 30);
    expect(now.stdout).toMatch(/No route to host/);
    expect(now.egress_refused_to).toEqual([`${gateway}:${hostPort}`]);
    // Back to the policy alone: both reached.
    expect((await put({ policy: 'full' })).json).toEqual({ session_id: s, policy: 'full', egress: [] });
    expect((await b.exec(s, fetch(gateway, hostPort))).stdout).toBe('from-host\n');
    expect((await b.exec(s, fetch(peer, PEER_PORT))).stdout).toBe('from-peer\n');
    await b.release(s);
    await b.release(neighbour);
  });

  it('DNS names: an allowed name (and a wildcard\'s) resolves and connects; others are NXDOMAIN, and their addresses refused', async () => {
    const b = await broker();
    const s = await b.acquire();
    const put = putter(b, s);
    expect((await put({ policy: 'none', egress: [{ action: 'allow', target: 'allowed.test' }, { action: 'allow', target: '*.wild.test' }] })).status).toBe(200);
    expect((await b.exec(s, fetch('allowed.test', hostPort))).stdout).toBe('from-host\n');
    expect((await b.exec(s, fetch('a.wild.test', PEER_PORT))).stdout).toBe('from-peer\n');
    // The wildcard is not its domain (OpenSandbox's), and a name no rule allows is not resolved at all.
    for (const name of ['wild.test', 'other.test']) {
      expect((await b.exec(s, `nslookup ${name} 2>&1; true`)).stdout).toMatch(/NXDOMAIN|can't resolve/i);
    }
    expect(dns.asked).not.toContain('other.test');
    // Rules changed: only allowed.test; the peer's address, learned for *.wild.test, is refused now.
    expect((await put({ policy: 'none', egress: [{ action: 'allow', target: 'allowed.test' }] })).status).toBe(200);
    const refused = await b.execFull(s, fetch(peer, PEER_PORT), 30);
    expect(refused.stdout).toMatch(/No route to host/);
    expect(refused.egress_refused_to).toEqual([`${peer}:${PEER_PORT}`]);
    expect((await b.exec(s, fetch('allowed.test', hostPort))).stdout).toBe('from-host\n');
    await b.release(s);
  });

  it("on an engine's user network (its resolver at 127.0.0.11 in the container) names resolve through the broker's resolver too", async () => {
    const network = await docker.createNetwork({ Name: `${deployment}-net`, Labels: { [LABEL_DEPLOYMENT]: deployment } });
    try {
      const b = await broker({ BROKER_NETWORK_MODE: `${deployment}-net` });
      const s = await b.acquire();
      expect((await b.exec(s, 'grep -c "nameserver 127.0.0.11" /etc/resolv.conf')).stdout).toBe('1\n');
      expect((await putter(b, s)({ policy: 'none', egress: [{ action: 'allow', target: 'allowed.test' }] })).status).toBe(200);
      expect((await b.exec(s, fetch('allowed.test', hostPort))).stdout).toBe('from-host\n');
      await b.release(s);
    } finally {
      await tb?.close().catch(() => undefined);
      tb = null;
      await network.remove().catch(() => undefined);
    }
  });

  it('bad rules: a 400 in the pool\'s format and in the lifecycle\'s, and nothing changes', async () => {
    // The lifecycle's sandboxes come from a pool of whole containers, whose sessions get networks of their own when it names one.
    const b = await broker({ BROKER_POOLS: JSON.stringify({ whole: { containers: 1, sessions_per_container: 1, fresh_container: true, network: 'full' } }) });
    await eventually(async () => (await b.get('/health')).json.pools?.whole?.available_sessions === 1, LONG, 'the pool of whole containers warm');
    const s = await b.acquire();
    const put = putter(b, s);
    expect((await put({ policy: 'none', egress: [{ action: 'allow', target: `${gateway}/32` }] })).status).toBe(200);
    for (const egress of [[{ action: 'allow', target: 'a.*.test' }], [{ action: 'allow', target: '10.0.0.0/33' }], [{ action: 'permit', target: '10.0.0.1' }], [{ action: 'allow' }], 'x', [{ action: 'allow', target: 'x.test', port: 1 }]]) {
      const bad = await put({ policy: 'full', egress });
      expect({ egress, status: bad.status, code: bad.json.code }).toEqual({ egress, status: 400, code: 'bad_request' });
    }
    expect((await b.exec(s, fetch(gateway, hostPort))).stdout).toBe('from-host\n');
    expect((await b.exec(s, fetch(peer, PEER_PORT))).stdout).toMatch(/No route to host/);
    await b.release(s);
    // The lifecycle's: a create with a bad target starts nothing; a sandbox's PATCH with one changes nothing.
    const badCreate = await b.post('/v1/sandboxes', { extensions: { poolRef: 'whole' }, timeout: 600, networkPolicy: { defaultAction: 'deny', egress: [{ action: 'allow', target: '*' }] } });
    expect({ status: badCreate.status, code: badCreate.json.code }).toEqual({ status: 400, code: 'INVALID_REQUEST_BODY' });
    const created = await b.post('/v1/sandboxes', { extensions: { poolRef: 'whole' }, timeout: 600, networkPolicy: { defaultAction: 'deny', egress: [{ action: 'allow', target: `${gateway}/32` }] } });
    expect(created.status).toBeLessThan(300);
    const id = created.json.id as string;
    const policy = `/sandboxes/${id}/egress/policy`;
    expect((await b.get(policy)).json).toEqual({ status: 'ok', mode: 'enforcing', enforcementMode: 'netns', policy: { defaultAction: 'deny', egress: [{ action: 'allow', target: `${gateway}/32` }] } });
    const bad = await b.request('PATCH', policy, JSON.stringify([{ action: 'allow', target: '300.1.2.3' }]), { 'content-type': 'application/json' });
    expect({ status: bad.status, code: bad.json.code }).toEqual({ status: 400, code: 'INVALID_REQUEST_BODY' });
    expect((await b.get(policy)).json.policy.egress).toEqual([{ action: 'allow', target: `${gateway}/32` }]);
    // A good PATCH merges (the peer appended), DELETE removes by target.
    const patched = await b.request('PATCH', policy, JSON.stringify([{ action: 'allow', target: peer }]), { 'content-type': 'application/json' });
    expect(patched.json.policy.egress).toEqual([{ action: 'allow', target: `${gateway}/32` }, { action: 'allow', target: peer }]);
    const deleted = await b.request('DELETE', policy, JSON.stringify([`${gateway}/32`]), { 'content-type': 'application/json' });
    expect(deleted.json.policy.egress).toEqual([{ action: 'allow', target: peer }]);
    await eventually(async () => (await b.request('DELETE', `/v1/sandboxes/${id}`)).status < 300, LONG, 'the sandbox deleted');
  });
});
