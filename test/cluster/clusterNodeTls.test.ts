/**
 * Gateways and nodes over mutual TLS (BROKER_CLUSTER_CA/CERT/KEY; every test cluster runs so, this
 * suite holds it to what it promises): nodes serve HTTPS and register https:// addresses; the pool
 * API, a streamed answer and a WebSocket pass through a gateway; a client without a certificate of
 * the cluster's CA is refused at the handshake, whatever token it carries; a gateway whose
 * certificate or CA is another's, or that has none, reaches no node and says why (502
 * node_unreachable, in the API's format, a WebSocket's handshake too); a node with half of the settings, or a certificate that
 * does not name its address, refuses to start.
 *
 * TLS between gateways and nodes is the same whatever the nodes run:
 * @backend any
 */
import fs from 'node:fs';
import tls from 'node:tls';
import { Agent, request } from 'undici';
import type WebSocket from 'ws';
import { useTestCluster, CLIENT_TOKEN, CLUSTER_TOKEN, nodeOf } from '../helpers/cluster';
import { call } from '../../devtools/clusterProcs';
import { type BrokerProcess } from '../../devtools/brokerProcess';
import { openSocket } from '../helpers/workspaceClient';
import { execdSdk } from '../helpers/execdClient';
import { eventually } from '../helpers/broker';

const cluster = useTestCluster(['n1', 'n2'], 1);
const AUTH = { authorization: `Bearer ${CLIENT_TOKEN}` };

function closed(socket: WebSocket): Promise<number> {
  return new Promise((resolve) => (socket.readyState === socket.CLOSED ? resolve(1006) : socket.once('close', (code) => resolve(code))));
}

/** A scrape of a node's /metrics with the cluster token, over TLS with `connect`'s options: its status, or the error code its handshake ended with. */
async function direct(node: BrokerProcess, connect: tls.ConnectionOptions): Promise<number | string> {
  const agent = new Agent({ connect });
  try {
    const r = await request(`${node.url}/metrics`, { headers: { 'x-broker-cluster-token': CLUSTER_TOKEN }, dispatcher: agent });
    await r.body.dump();
    return r.statusCode;
  } catch (err) {
    return String((err as { code?: string }).code ?? (err as Error).message);
  } finally {
    await agent.close();
  }
}

describe('gateways and nodes over mutual TLS', () => {
  test('nodes register https:// addresses; acquire, execute, a streamed answer and release pass through the gateway', async () => {
    const [gateway] = cluster.gateways;
    expect(cluster.nodeTls).toBe(true);
    const health = await cluster.health(gateway);
    expect(health.nodes.map((n) => n.address).sort()).toEqual(['n1', 'n2'].map((id) => cluster.nodes.get(id)!.url).sort());
    for (const n of health.nodes) expect(n.address).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);

    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const acquired = await cluster.call(gateway, 'POST', '/session/acquire', {});
      expect(acquired.status).toBe(200);
      ids.push(acquired.json.session_id as string);
    }
    expect(new Set(ids.map(nodeOf)).size).toBeGreaterThanOrEqual(1);
    for (const id of ids) {
      const ran = await cluster.call(gateway, 'POST', `/session/${id}/execute`, { command: 'echo over-tls' });
      expect([ran.status, ran.json.stdout]).toEqual([200, 'over-tls\n']);
    }
    // A streamed answer: the second line is written only once the test has read the first.
    const id = ids[0];
    const sdk = execdSdk(gateway.url, id, AUTH);
    const touches: Array<Promise<{ status: number }>> = [];
    const run = await sdk.commands.run('echo first; while [ ! -e go ]; do sleep 0.05; done; echo second', undefined, {
      onStdout: (m) => {
        if (m.text === 'first') touches.push(cluster.call(gateway, 'POST', `/session/${id}/execute`, { command: 'touch go' }));
      },
    });
    expect(run.logs.stdout.map((m) => m.text)).toEqual(['first', 'second']);
    expect((await Promise.all(touches)).map((r) => r.status)).toEqual([200]);
    for (const held of ids) expect((await cluster.call(gateway, 'POST', `/session/${held}/release`)).json).toEqual({ status: 'released' });
  });

  test("a workspace's WebSocket is tunnelled to its node over TLS", async () => {
    const [gateway] = cluster.gateways;
    const created = await cluster.call(gateway, 'POST', '/workspaces', {});
    expect(created.status).toBe(201);
    const id = created.json.workspace_id as string;
    const events: Array<Record<string, unknown>> = [];
    const viewer = await openSocket(`${gateway.url.replace(/^http/, 'ws')}/workspaces/${id}/ws/workspace`, AUTH, (data) => events.push(JSON.parse(data.toString('utf8'))));
    expect((await cluster.call(gateway, 'POST', `/workspaces/${id}/api/execute`, { command: 'echo "tunnelled $((40+2))"' })).status).toBe(200);
    await eventually(() => events.some((e) => e.type === 'output' && e.line === 'tunnelled 42'), 30_000, () => `the output on the viewer (got ${JSON.stringify(events.slice(-5))})`);
    viewer.close();
    await closed(viewer);
    expect((await cluster.call(gateway, 'DELETE', `/workspaces/${id}`)).status).toBe(200);
  });

  test("a client without a certificate of the cluster's CA is refused at the handshake, the cluster token notwithstanding", async () => {
    const node = cluster.nodes.get('n1')!;
    const pki = cluster.etcd.pki!;
    const ca = fs.readFileSync(pki.clusterCa);
    // The gateways' certificate opens the node (the token then admits the call).
    expect(await direct(node, { ca, cert: fs.readFileSync(pki.gatewayCert), key: fs.readFileSync(pki.gatewayKey) })).toBe(200);
    // In TLS 1.2 (what gateways speak) the handshake itself fails: with no certificate, an alert;
    // with one another CA signed (the store's client one, the stranger's), the node closes it.
    const tls12 = { ca, maxVersion: 'TLSv1.2' } as const;
    expect(await direct(node, tls12)).toBe('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE');
    expect(await direct(node, { ...tls12, cert: fs.readFileSync(pki.clientCert), key: fs.readFileSync(pki.clientKey) })).toBe('ECONNRESET');
    expect(await direct(node, { ...tls12, cert: fs.readFileSync(pki.strangerCert), key: fs.readFileSync(pki.strangerKey) })).toBe('ECONNRESET');
    // In TLS 1.3 the client's side of the handshake ends first: its request is then cut, unanswered.
    expect(await direct(node, { ca })).toBe('UND_ERR_SOCKET');
    expect(await direct(node, { ca, cert: fs.readFileSync(pki.strangerCert), key: fs.readFileSync(pki.strangerKey) })).toBe('UND_ERR_SOCKET');
    // Plain HTTP to the node's port gets no HTTP answer at all.
    const plain = await call(node.url.replace(/^https:/, 'http:'), 'GET', '/health').then(
      (r) => r.status,
      (err: { code?: string }) => err.code,
    );
    expect(typeof plain).toBe('string');
  });

  test('a gateway whose certificate, CA or scheme is not the cluster’s reaches no node and says why, in the API’s format', async () => {
    const pki = cluster.etcd.pki!;
    const [good] = cluster.gateways;
    const held = (await cluster.call(good, 'POST', '/session/acquire', {})).json.session_id as string;
    const strangers: Array<[string, Record<string, string>, RegExp]> = [
      ['a certificate another CA signed', { BROKER_CLUSTER_CERT: pki.strangerCert, BROKER_CLUSTER_KEY: pki.strangerKey }, /ECONNRESET: .*before secure TLS connection was established, as a node does with a client certificate its CA did not sign/],
      ["another CA, which did not sign the nodes' certificates", { BROKER_CLUSTER_CA: pki.ca }, /SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE/],
      ['no cluster certificate', { BROKER_CLUSTER_CA: '', BROKER_CLUSTER_CERT: '', BROKER_CLUSTER_KEY: '' }, /HTTPS, and this gateway has no cluster certificate/],
    ];
    try {
      for (const [what, env, reason] of strangers) {
        const gateway = await cluster.startGatewayWith(env);
        try {
          await eventually(async () => (await cluster.health(gateway)).nodes.length === 2, 30_000, 'the gateway to list both nodes');
          const acquired = await cluster.call(gateway, 'POST', '/session/acquire', {});
          expect({ what, status: acquired.status, code: acquired.json.code }).toEqual({ what, status: 502, code: 'node_unreachable' });
          expect(acquired.json.detail).toMatch(reason);
          expect(acquired.json.detail).toMatch(/^Node 'n[12]' could not be reached \(.*\); the call did not reach it$/);
          // A routed call: the same 502, not a lost node; the session goes on through the cluster's own gateway.
          const ran = await cluster.call(gateway, 'POST', `/session/${held}/execute`, { command: 'true' });
          expect({ what, status: ran.status, code: ran.json.code }).toEqual({ what, status: 502, code: 'node_unreachable' });
          // OpenSandbox's API answers in its own format.
          const listed = await cluster.call(gateway, 'GET', '/v1/sandboxes');
          expect({ what, status: listed.status }).toEqual({ what, status: 502 });
          expect(listed.json.message).toMatch(reason);
          // A WebSocket's handshake: the gateway answers it, the tunnel never opened.
          const upgrade = await openSocket(`${gateway.url.replace(/^http/, 'ws')}/ws/workspace`, AUTH).then(
            (socket) => {
              socket.close();
              return { status: 101, body: '' };
            },
            (err: { status?: number; body?: string }) => ({ status: err.status, body: err.body ?? '' }),
          );
          expect({ what, status: upgrade.status }).toEqual({ what, status: 502 });
          expect(JSON.parse(upgrade.body)).toMatchObject({ code: 'node_unreachable', detail: expect.stringMatching(reason) as string });
          const metrics = (await cluster.call(gateway, 'GET', '/metrics')).text;
          expect(metrics).toMatch(/broker_gateway_request_errors_total\{node="n[12]",reason="tls"\} [1-9]/);
        } finally {
          await gateway.stop();
          cluster.gateways.splice(cluster.gateways.indexOf(gateway), 1);
        }
      }
      expect((await cluster.call(good, 'POST', `/session/${held}/execute`, { command: 'echo still' })).json.stdout).toBe('still\n');
    } finally {
      await cluster.call(good, 'POST', `/session/${held}/release`);
    }
  });

  test('a node with half of the settings, or a certificate that does not name its address, refuses to start and says why', async () => {
    const pki = cluster.etcd.pki!;
    await expect(cluster.startNodeWith('half', { BROKER_CLUSTER_KEY: '' })).rejects.toThrow(
      /exited before listening[\s\S]*BROKER_CLUSTER_CA, BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY go together \(mutual TLS between gateways and nodes\): BROKER_CLUSTER_KEY is missing/,
    );
    await expect(cluster.startNodeWith('plain', { BROKER_NODE_ADDRESS: 'http://127.0.0.1:1' })).rejects.toThrow(/exited before listening[\s\S]*BROKER_NODE_ADDRESS must be https:\/\//);
    // The gateways' certificate names no host: as a node's, it does not name 127.0.0.1.
    await expect(cluster.startNodeWith('unnamed', { BROKER_CLUSTER_CERT: pki.gatewayCert, BROKER_CLUSTER_KEY: pki.gatewayKey })).rejects.toThrow(
      /exited before listening[\s\S]*BROKER_CLUSTER_CERT does not name '127\.0\.0\.1', the host of this node's address https:\/\/127\.0\.0\.1:\d+/,
    );
    // A key that is not the certificate's.
    await expect(cluster.startNodeWith('mismatched', { BROKER_CLUSTER_KEY: pki.gatewayKey })).rejects.toThrow(/exited before listening[\s\S]*do not make a TLS identity/);
    expect((await cluster.health(cluster.gateways[0])).nodes.map((n) => n.node_id).sort()).toEqual(['n1', 'n2']);
  });
});
