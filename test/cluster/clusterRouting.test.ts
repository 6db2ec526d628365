/**
 * The pool API through a cluster of real processes: a private etcd, two node brokers and two
 * gateways. Sessions are placed over both nodes, any gateway serves any session by its id, an
 * acquire retried with its request_id through the other gateway gets the same session, and nobody
 * reaches a node without the cluster's token.
 *
 * Placement and routing by id are the gateways', whatever the nodes run:
 * @backend any
 */
import { useTestCluster, CLIENT_TOKEN, CLUSTER_TOKEN, SESSIONS_PER_NODE, nodeOf, tagNamesPid } from '../helpers/cluster';
import { call, dispatcherFor } from '../../devtools/clusterProcs';
import { request } from 'undici';
import { execdSdk } from '../helpers/execdClient';

const cluster = useTestCluster();

/** The backend instance of the shell that ran the command, which names its node's pid (tagNamesPid). */
const SHELL_OWNER = 'echo "$BROKER_SESSION_TAG"';

describe('a cluster of 2 nodes and 2 gateways', () => {
  test('the pool contract through a gateway, with sessions on both nodes, each shell on the node its id names', async () => {
    const [g1] = cluster.gateways;
    const ids: string[] = [];
    for (let i = 0; i < 2 * SESSIONS_PER_NODE; i++) {
      const r = await cluster.call(g1, 'POST', '/session/acquire', {});
      expect(r.status).toBe(200);
      expect(Object.keys(r.json)).toEqual(['session_id']);
      ids.push(r.json.session_id);
    }
    expect(new Set(ids.map(nodeOf))).toEqual(new Set(['n1', 'n2']));
    for (const id of ids) {
      const r = await cluster.call(g1, 'POST', `/session/${id}/execute`, { command: `cd /tmp && X=${nodeOf(id)}; ${SHELL_OWNER}` });
      expect(r.status).toBe(200);
      expect(Object.keys(r.json)).toEqual(['status', 'stdout', 'stderr', 'return_code']);
      expect(tagNamesPid(r.json.stdout, cluster.nodes.get(nodeOf(id))!.pid)).toBe(true);
      expect(tagNamesPid(r.json.stdout, cluster.nodes.get(nodeOf(id) === 'n1' ? 'n2' : 'n1')!.pid)).toBe(false);
      // State persists between executes, through the gateway.
      const again = await cluster.call(g1, 'POST', `/session/${id}/execute`, { command: 'echo "$PWD $X"' });
      expect(again.json.stdout).toBe(`/tmp ${nodeOf(id)}\n`);
    }
    // Every session is leased: the next acquire waits, then answers as a standalone broker would.
    const full = await cluster.call(g1, 'POST', '/session/acquire', { acquire_timeout: 1 });
    expect(full.status).toBe(503);
    expect(full.json).toEqual({ detail: 'No session available within 1 seconds', code: 'pool_exhausted' });
    for (const id of ids) expect((await cluster.call(g1, 'POST', `/session/${id}/release`)).json).toEqual({ status: 'released' });
    // The spec's errors come from the node that holds the id, byte for byte.
    const released = await cluster.call(g1, 'POST', `/session/${ids[0]}/execute`, { command: 'true' });
    expect([400, 404, 410]).toContain(released.status);
    expect(released.json.code).not.toBe('node_lost');
    await cluster.waitMembers(['n1', 'n2']);
  });

  test("a malformed acquire or execute gets, through a gateway, the node's answer byte for byte", async () => {
    const [g1] = cluster.gateways;
    const node = cluster.nodes.get('n1')!;
    const raw = async (base: string, path: string, body: string, headers: Record<string, string>) => {
      const r = await request(base + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, dispatcher: dispatcherFor(base) });
      return { status: r.statusCode, text: await r.body.text() };
    };
    const session = `n1.${(await cluster.health(g1)).nodes.find((n) => n.node_id === 'n1')!.incarnation}.${'0'.repeat(32)}`;
    const cases: Array<[string, string]> = [
      ['/session/acquire', '{'],
      ['/session/acquire', '[1]'],
      ['/session/acquire', '{"acquire_timeout": -1}'],
      ['/session/acquire', '{"files": {"../x": "aGk="}}'],
      ['/session/acquire', '{"pool": "no-such-pool"}'],
      [`/session/${session}/execute`, '{"command": "true"}'],
      [`/session/${session}/execute`, '{"timeout": "soon"}'],
    ];
    for (const [path, body] of cases) {
      const viaGateway = await raw(g1.url, path, body, { authorization: `Bearer ${CLIENT_TOKEN}` });
      const direct = await raw(node.url, path, body, { 'x-broker-cluster-token': CLUSTER_TOKEN });
      expect({ path, body, ...viaGateway }).toEqual({ path, body, ...direct });
      expect(viaGateway.status).toBeGreaterThanOrEqual(400);
    }
  });

  test('request bodies reach the node whole through a gateway: small ones read whole, a large one and a chunked one streamed', async () => {
    const [g1] = cluster.gateways;
    const id = (await cluster.call(g1, 'POST', '/session/acquire', {})).json.session_id as string;
    const countCommand = (size: number): string => `printf %s '${'x'.repeat(size)}' | wc -c`;
    try {
      // Either side of the size read whole (64 KiB), and far above it.
      for (const size of [1, 64 * 1024 - 64, 64 * 1024 + 64, 300 * 1024]) {
        const r = await cluster.call(g1, 'POST', `/session/${id}/execute`, { command: countCommand(size) });
        expect(r.status).toBe(200);
        expect(r.json.stdout.trim()).toBe(String(size));
      }
      // No declared length: sent chunked, in two parts.
      const bytes = new TextEncoder().encode(JSON.stringify({ command: countCommand(1000) }));
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.slice(0, 100));
          controller.enqueue(bytes.slice(100));
          controller.close();
        },
      });
      const chunked = await fetch(`${g1.url}/session/${id}/execute`, {
        method: 'POST',
        body,
        duplex: 'half',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_TOKEN}` },
      } as RequestInit);
      expect(chunked.status).toBe(200);
      expect(((await chunked.json()) as { stdout: string }).stdout.trim()).toBe('1000');
    } finally {
      await cluster.call(g1, 'POST', `/session/${id}/release`);
    }
  });

  test('a session acquired through one gateway is executed and released through the other', async () => {
    const [g1, g2] = cluster.gateways;
    const id = (await cluster.call(g1, 'POST', '/session/acquire', {})).json.session_id as string;
    expect((await cluster.call(g2, 'POST', `/session/${id}/execute`, { command: 'export Y=42' })).status).toBe(200);
    const r = await cluster.call(g1, 'POST', `/session/${id}/execute`, { command: 'echo $Y' });
    expect(r.json.stdout).toBe('42\n');
    expect((await cluster.call(g2, 'POST', `/session/${id}/release`)).json).toEqual({ status: 'released' });
  });

  test('an acquire retried with its request_id through the other gateway gets the same session', async () => {
    const [g1, g2] = cluster.gateways;
    const body = { request_id: `episode-${Date.now()}`, startup_commands: ['echo ready'] };
    const first = await cluster.call(g1, 'POST', '/session/acquire', body);
    expect(first.status).toBe(200);
    const retry = await cluster.call(g2, 'POST', '/session/acquire', body);
    expect(retry.status).toBe(200);
    expect(retry.json).toEqual(first.json);
    // One lease, not two: the nodes' own /health (no heartbeat's lag) count one session in use.
    let inUse = 0;
    for (const node of cluster.nodes.values()) inUse += (await call(node.url, 'GET', '/health')).json.in_use_sessions as number;
    expect(inUse).toBe(1);
    expect((await cluster.call(g2, 'POST', `/session/${first.json.session_id}/release`)).status).toBe(200);
    await cluster.waitMembers(['n1', 'n2']);
  });

  test('an execute retried with its request_id through the other gateway runs once', async () => {
    const [g1, g2] = cluster.gateways;
    const id = (await cluster.call(g1, 'POST', '/session/acquire', {})).json.session_id as string;
    const body = { command: 'echo x >> runs; wc -l < runs', request_id: 'step-1' };
    const first = await cluster.call(g1, 'POST', `/session/${id}/execute`, body);
    const retry = await cluster.call(g2, 'POST', `/session/${id}/execute`, body);
    expect(retry.json).toEqual(first.json);
    expect((await cluster.call(g2, 'POST', `/session/${id}/execute`, { command: 'wc -l < runs' })).json.stdout).toBe('1\n');
    await cluster.call(g2, 'POST', `/session/${id}/release`);
  });

  test("a session's execd stream passes through the gateway as it comes, not once the command ended", async () => {
    const [g1, g2] = cluster.gateways;
    const id = (await cluster.call(g1, 'POST', '/session/acquire', {})).json.session_id as string;
    const sdk = execdSdk(g2.url, id, { authorization: `Bearer ${CLIENT_TOKEN}` });
    // The command waits for a file that the test writes only once it has read the first line: a
    // gateway that held the answer until the command ended would never let it end.
    const touches: Array<Promise<{ status: number }>> = [];
    const run = await sdk.commands.run('echo first; while [ ! -e go ]; do sleep 0.05; done; echo second', undefined, {
      onStdout: (m) => {
        if (m.text === 'first') touches.push(cluster.call(g1, 'POST', `/session/${id}/execute`, { command: 'touch go' }));
      },
    });
    expect(run.logs.stdout.map((m) => m.text)).toEqual(['first', 'second']);
    expect(run.exitCode).toBe(0);
    expect((await Promise.all(touches)).map((r) => r.status)).toEqual([200]);
    await cluster.call(g2, 'POST', `/session/${id}/release`);
  });

  test("a gateway wants the client's token; a node wants the cluster's, so no one bypasses a gateway", async () => {
    const [g1] = cluster.gateways;
    const node = cluster.nodes.get('n1')!;
    const noToken = await call(g1.url, 'POST', '/session/acquire', {});
    expect(noToken.status).toBe(401);
    expect(noToken.json.code).toBe('unauthorized');
    // The client's token opens no node.
    const direct = await cluster.call(node, 'POST', '/session/acquire', {});
    expect(direct.status).toBe(401);
    expect(direct.json.code).toBe('unauthorized');
    expect((await call(node.url, 'GET', '/metrics')).status).toBe(401);
    // The cluster's token does (a scraper's bearer), and /health is public as on any broker.
    expect((await call(node.url, 'GET', '/metrics', undefined, { authorization: `Bearer ${CLUSTER_TOKEN}` })).status).toBe(200);
    expect((await call(node.url, 'GET', '/health')).status).toBe(200);
  });

  test('the gateway reports the cluster: totals by pool, each node with its address, health and heartbeat age; targets and routing series', async () => {
    const [g1] = cluster.gateways;
    const health = await cluster.health(g1);
    expect(health).toMatchObject({ status: 'healthy', total_sessions: 2 * SESSIONS_PER_NODE, store_connected: true });
    for (const node of health.nodes) {
      expect(node.address).toBe(cluster.nodes.get(node.node_id)!.url);
      expect(node.health).toBe('healthy');
      expect(node.heartbeat_age_ms).toBeGreaterThanOrEqual(0);
    }
    const targets = await cluster.call(g1, 'GET', '/cluster/targets');
    expect(targets.json).toEqual(
      expect.arrayContaining(['n1', 'n2'].map((id) => ({ targets: [new URL(cluster.nodes.get(id)!.url).host], labels: { node: id, __scheme__: cluster.nodeTls ? 'https' : 'http' } }))),
    );
    const metrics = (await cluster.call(g1, 'GET', '/metrics')).text;
    expect(metrics).toMatch(/broker_gateway_requests_total\{node="n1",status="200"\} [1-9]/);
    expect(metrics).toMatch(/broker_gateway_nodes_up\{health="healthy"\} 2/);
  });
});
