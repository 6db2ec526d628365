/**
 * Each session's network namespace (src/backends/docker/isolation/sessionNet.c): its own loopback,
 * so two sessions of one container bind the same port and neither reaches the other's server (on
 * loopback or on its address); policy `full` reaches a server the test starts on the engine's
 * bridge, as the container does; policy `none` reaches nothing outside its loopback, and says so at
 * once (no route), never hanging. No timing is asserted: a hang would end in wget's own timeout,
 * whose message differs from the refusal's.
 * @backend docker
 */
import Dockerode from 'dockerode';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually, startTestBroker, type TestBroker, testDeployment } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { labelledContainers, removeLabelledContainers } from '../helpers/dockerFaults';

const LONG = 120_000;
jest.setTimeout(300_000);
const docker = new Dockerode();
/** The containers on the engine's bridge (the test projects default to no network): the sessions' egress is the policy's alone. */
const BRIDGE = { BROKER_NETWORK_MODE: 'bridge' };

/** The engine's bridge gateway: containers on it reach this host there. */
async function bridgeAddress(): Promise<string> {
  const info = await docker.getNetwork('bridge').inspect();
  const gateway = (info as { IPAM?: { Config?: { Gateway?: string }[] } }).IPAM?.Config?.[0]?.Gateway;
  if (!gateway) throw new Error("the engine's bridge network has no gateway");
  return gateway;
}

/** A server on the bridge that counts its requests. */
async function bridgeServer(): Promise<{ server: http.Server; host: string; port: number; hits: () => number }> {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.end('from-host\n');
  });
  const host = await bridgeAddress();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, host, port: (server.address() as AddressInfo).port, hits: () => hits };
}

/** Serves the session's working directory on `port` of `bind` (BusyBox httpd forks into the background). */
const serve = (bind: string, port: number, text: string): string => `echo ${text} >index.html && httpd -p ${bind}:${port} -h "$PWD" && echo serving`;
/**
 * GET / by bash's own /dev/tcp (the image's BusyBox wget is not to be trusted): the body's last
 * line, or bash's error (`Connection refused`, `Network is unreachable`...). bash's connect has no
 * timeout of its own: a silent drop would hang it until the execute's timeout, which fails the test.
 */
const fetch = (host: string, port: number): string => `(exec 3<>/dev/tcp/${host}/${port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && tail -n1 <&3) 2>&1 | sed 's/^.*: //'; true`;

describeDocker('docker per-session networks', () => {
  let tb: TestBroker | null = null;
  const deployment = testDeployment(`net-${process.pid}`);
  const servers: http.Server[] = [];

  afterEach(async () => {
    await tb?.close().catch(() => undefined);
    tb = null;
    for (const s of servers.splice(0)) s.close();
  });

  afterAll(async () => {
    await removeLabelledContainers(docker, deployment);
    await removeLabelledContainers(docker, `${deployment}.whole`);
  });

  /** A server on the bridge, and a broker of one container of one session on the bridge, warm. */
  async function withBridgeServer(env: Record<string, string>): Promise<{ host: Awaited<ReturnType<typeof bridgeServer>>; b: TestBroker }> {
    const host = await bridgeServer();
    servers.push(host.server);
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_SESSION_ISOLATION: '1', ...BRIDGE, ...env }));
    await b.waitAllAvailable(LONG);
    return { host, b };
  }

  it('two sessions of one container bind the same port; neither reaches the other\'s server', async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '1', ...BRIDGE }));
    await b.waitAllAvailable(LONG);
    expect((await b.get('/health')).json.isolation).toMatchObject({ network: { policy: 'full', own_network_containers: 1, routed_containers: 1, refusal: null } });
    const [a, c] = [await b.acquire(), await b.acquire()];
    expect((await b.exec(a, serve('127.0.0.1', 8765, 'from-a'))).stdout).toBe('serving\n');
    // Nothing listens on c's own loopback: refused there, whatever a's namespace holds.
    expect((await b.exec(c, fetch('127.0.0.1', 8765))).stdout).toMatch(/refused/i);
    expect((await b.exec(c, serve('127.0.0.1', 8765, 'from-c'))).stdout).toBe('serving\n');
    expect((await b.exec(a, fetch('127.0.0.1', 8765))).stdout).toBe('from-a\n');
    expect((await b.exec(c, fetch('127.0.0.1', 8765))).stdout).toBe('from-c\n');
    // On every address: a's server on all of a's addresses is refused to c, on a's address too.
    expect((await b.exec(a, serve('0.0.0.0', 8766, 'wide-a'))).stdout).toBe('serving\n');
    const aAddress = (await b.exec(a, "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1")).stdout.trim();
    expect(aAddress).toMatch(/^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.\d+\.\d+$/);
    expect((await b.exec(a, fetch(aAddress, 8766))).stdout).toBe('wide-a\n');
    const across = (await b.exec(c, fetch(aAddress, 8766))).stdout;
    expect(across).not.toContain('wide-a');
    expect(across).toMatch(/refused|unreachable|No route to host/i);
    await b.release(a);
    await b.release(c);
  });

  it('policy full reaches a server on the engine\'s bridge, as its container does', async () => {
    const { host, b } = await withBridgeServer({});
    const s = await b.acquire();
    expect((await b.exec(s, fetch(host.host, host.port))).stdout).toBe('from-host\n');
    expect(host.hits()).toBe(1);
    await b.release(s);
  });

  it('policy none: connecting and resolving fail at once (no route), and nothing arrives', async () => {
    const { host, b } = await withBridgeServer({ BROKER_SESSION_NETWORK: 'none' });
    expect((await b.get('/health')).json.isolation).toMatchObject({ network: { policy: 'none', own_network_containers: 1 } });
    const s = await b.acquire();
    // Refused at once, and counted: the execute's facts say how many its policy refused.
    const refused = await b.execFull(s, fetch(host.host, host.port), 30);
    expect(refused.stdout).toMatch(/Network is unreachable/);
    expect(refused.egress_refused).toBeGreaterThanOrEqual(1);
    expect((await b.execFull(s, 'true', 30)).egress_refused).toBe(0);
    // The resolver's server is beyond the loopback too: refused by the kernel, not waited for.
    expect((await b.exec(s, 'nslookup example.com 2>&1; true')).stdout).toMatch(/unreachable|can't resolve|connection refused/i);
    expect((await b.exec(s, 'ip route; echo routes')).stdout).toBe('routes\n');
    // Its own loopback works.
    expect((await b.exec(s, `${serve('127.0.0.1', 8000, 'mine')} >/dev/null && ${fetch('127.0.0.1', 8000)}`)).stdout).toBe('mine\n');
    expect(host.hits()).toBe(0);
    await b.release(s);
  });

  it("PUT /session/{id}/network: none during the lease, full again; the slot's next lease gets its pool's", async () => {
    const { host, b } = await withBridgeServer({});
    const s = await b.acquire();
    const put = (body: unknown) => b.request('PUT', `/session/${s}/network`, JSON.stringify(body), { 'content-type': 'application/json' });
    expect((await b.exec(s, fetch(host.host, host.port))).stdout).toBe('from-host\n');
    // A server of its own on its loopback outlives the changes: only the egress changes.
    expect((await b.exec(s, serve('127.0.0.1', 8000, 'mine'))).stdout).toBe('serving\n');
    const none = await put({ policy: 'none' });
    expect({ status: none.status, body: none.json }).toEqual({ status: 200, body: { session_id: s, policy: 'none', egress: [] } });
    expect((await b.exec(s, fetch(host.host, host.port))).stdout).toMatch(/Network is unreachable/);
    expect((await b.exec(s, fetch('127.0.0.1', 8000))).stdout).toBe('mine\n');
    // Bad input: a 400 in the pool's format, and nothing changes.
    const bad = await put({ policy: 'some' });
    expect({ status: bad.status, code: bad.json.code }).toEqual({ status: 400, code: 'bad_request' });
    expect((await b.exec(s, fetch(host.host, host.port))).stdout).toMatch(/Network is unreachable/);
    expect((await put({ policy: 'full' })).status).toBe(200);
    expect((await b.exec(s, fetch(host.host, host.port))).stdout).toBe('from-host\n');
    expect((await put({ policy: 'none' })).status).toBe(200);
    await b.release(s);
    await b.waitAllAvailable(LONG);
    const next = await b.acquire();
    expect((await b.exec(next, fetch(host.host, host.port))).stdout).toBe('from-host\n');
    expect(host.hits()).toBe(3);
    await b.release(next);
  });

  it("escape attempts on the network fail: ip changes, joining another namespace, a neighbour's sockets in /proc/net, raw sockets", async () => {
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '2', BROKER_SESSION_ISOLATION: '1', ...BRIDGE }));
    await b.waitAllAvailable(LONG);
    const [attacker, victim] = [await b.acquire(), await b.acquire()];
    expect((await b.exec(victim, serve('0.0.0.0', 8899, 'victim'))).stdout).toBe('serving\n');
    // CAP_NET_ADMIN is out of the bounding set: no process of the session can ever hold it.
    const bounding = (await b.exec(attacker, "sed -n 's/^CapBnd:\\s*//p' /proc/self/status")).stdout.trim();
    expect(BigInt(`0x${bounding}`) & (1n << 12n)).toBe(0n);
    const attempts = [
      'ip link add bkrx type dummy',
      'ip addr add 100.64.0.9/31 dev eth0',
      'ip link set eth0 down',
      'ip route del default',
      'ip link set lo down',
      'nsenter -t 1 -n true',
      'unshare -n true',
    ];
    for (const attempt of attempts) expect({ attempt, out: (await b.exec(attacker, `${attempt} 2>/dev/null && echo ESCAPED; true`)).stdout }).toEqual({ attempt, out: '' });
    // Nothing changed: its route and address are its own still.
    expect((await b.exec(attacker, 'ip route | grep -c default')).stdout).toBe('1\n');
    // /proc/net is its own namespace's: the neighbour's listening socket (port 8899 is 22C3) is not there.
    expect((await b.exec(attacker, 'grep -ci ":22C3 " /proc/net/tcp; true')).stdout).toBe('0\n');
    expect((await b.exec(victim, 'grep -ci ":22C3 " /proc/net/tcp; true')).stdout).toBe('1\n');
    // Its namespace holds its loopback and its veth alone: a raw socket there sees no neighbour's traffic.
    expect((await b.exec(attacker, 'ip -o link | wc -l')).stdout.trim()).toBe('2');
    await b.release(attacker);
    await b.release(victim);
  });

  it('a lifecycle create that denies egress from a pool of whole containers: its container leaves every network', async () => {
    const pools = { whole: { containers: 1, sessions_per_container: 1, fresh_container: true } };
    const b = (tb = await startTestBroker({ BROKER_DEPLOYMENT: deployment, BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_SESSION_ISOLATION: '1', BROKER_POOLS: JSON.stringify(pools), ...BRIDGE }));
    await b.waitAllAvailable(LONG);
    await eventually(async () => (await b.get('/health')).json.pools?.whole?.available_sessions === 1, LONG, 'the pool of whole containers warm');
    const networks = async (): Promise<string[]> => {
      const [c] = await labelledContainers(docker, `${deployment}.whole`);
      return Object.keys((await docker.getContainer(c.Id).inspect()).NetworkSettings.Networks ?? {});
    };
    expect(await networks()).toEqual(['bridge']);
    const created = await b.post('/v1/sandboxes', { extensions: { poolRef: 'whole' }, timeout: 600, networkPolicy: { defaultAction: 'deny', egress: [] } });
    expect(created.status).toBeLessThan(300);
    expect(await networks()).toEqual([]);
    expect((await b.request('DELETE', `/v1/sandboxes/${created.json.id}`)).status).toBeLessThan(300);
  });
});
