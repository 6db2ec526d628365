/**
 * The facades through a cluster of real processes (a private etcd, two nodes, two gateways): a
 * workspace created through one gateway on the node its id names and driven through the other, its
 * viewer's and its terminal's WebSockets tunnelled to that node; the default workspace on the home
 * node; OpenSandbox's SDK creating a sandbox and running a command; lists merged over the nodes; and,
 * on Docker, a group sandbox whose sandbox_url leads through the gateway.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type WebSocket from 'ws';
import { Sandbox, SandboxManager } from '@alibaba-group/opensandbox';
import { useTestCluster, CLIENT_TOKEN, CLUSTER_TOKEN, nodeOf } from '../helpers/cluster';
import { call } from '../../devtools/clusterProcs';
import { type BrokerProcess } from '../../devtools/brokerProcess';
import { openSocket } from '../helpers/workspaceClient';
import { eventually, testBackend } from '../helpers/broker';

const docker = testBackend === 'docker';
/** Group sandboxes' disks are loop-mounted ext4 images: root only, as in the group suite. */
const groups = docker && process.getuid?.() === 0;
const ci = Boolean(process.env.CI) && process.env.CI !== 'false';
const AUTH = { authorization: `Bearer ${CLIENT_TOKEN}` };
/** Each node's groups under a directory of its own: a node's first group sweeps its directory. */
const groupRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'bkr-cluster-groups-'));
const firstSandboxPort = 20_000 + Math.floor(Math.random() * 40_000);

const cluster = useTestCluster(['n1', 'n2'], 2, (nodeId) => ({
  BROKER_SANDBOX_IMAGE: 'bash-broker-sandbox:latest',
  BROKER_SANDBOX_PORTS: `${firstSandboxPort}-${firstSandboxPort + 20}`,
  BROKER_GROUP_DIR: path.join(groupRoot, nodeId),
  BROKER_ACTION_WAIT: '1',
}));

afterAll(() => fs.rmSync(groupRoot, { recursive: true, force: true }));

function wsUrl(gateway: BrokerProcess, urlPath: string): string {
  return gateway.url.replace(/^http/, 'ws') + urlPath;
}

function closed(socket: WebSocket): Promise<number> {
  return new Promise((resolve) => (socket.readyState === socket.CLOSED ? resolve(1006) : socket.once('close', (code) => resolve(code))));
}

describe('the facades through a cluster of 2 nodes and 2 gateways', () => {
  test('a workspace: created on a node its id names, run through the other gateway, its viewer and terminal WebSockets tunnelled to its node', async () => {
    const [g1, g2] = cluster.gateways;
    const created = await cluster.call(g1, 'POST', '/workspaces', {});
    expect(created.status).toBe(201);
    const id = created.json.workspace_id as string;
    expect(['n1', 'n2']).toContain(nodeOf(id));

    const events: Array<Record<string, unknown>> = [];
    const viewer = await openSocket(wsUrl(g2, `/workspaces/${id}/ws/workspace`), AUTH, (data) => events.push(JSON.parse(data.toString('utf8'))));
    const screen: Buffer[] = [];
    const terminal = await openSocket(wsUrl(g1, `/workspaces/${id}/ws/workspace/terminal`), AUTH, (data) => screen.push(data));

    const run = await cluster.call(g2, 'POST', `/workspaces/${id}/api/execute`, { command: 'echo "through the $((1+1))nd gateway"' });
    expect(run.status).toBe(200);
    await eventually(
      () => events.some((e) => e.type === 'output' && e.line === 'through the 2nd gateway'),
      30_000,
      () => `the output on the viewer's socket (got ${JSON.stringify(events.slice(-5))})`,
    );
    // Keys typed on the terminal's socket reach the node's shell, and its echo comes back.
    terminal.send(JSON.stringify({ type: 'input', data: 'echo typed-$((6*7))\n' }));
    await eventually(() => Buffer.concat(screen).toString('utf8').includes('typed-42'), 30_000, () => `typed-42 on the terminal (got ${JSON.stringify(Buffer.concat(screen).toString('utf8').slice(-300))})`);

    // The list through a gateway is every node's; the workspace is in it once.
    const listed = await cluster.call(g2, 'GET', '/workspaces');
    expect(listed.status).toBe(200);
    expect((listed.json as Array<{ workspace_id: string }>).filter((w) => w.workspace_id === id)).toHaveLength(1);

    viewer.close();
    terminal.close();
    await Promise.all([closed(viewer), closed(terminal)]);
    expect((await cluster.call(g1, 'DELETE', `/workspaces/${id}`)).json).toEqual({ workspace_id: id, status: 'ended' });
    expect((await cluster.call(g2, 'GET', `/workspaces/${id}/api/workspace/logs`)).status).toBe(404);
  });

  test('the default workspace at the root paths is the home node’s, whichever gateway is called', async () => {
    const [g1, g2] = cluster.gateways;
    expect((await cluster.call(g1, 'POST', '/api/execute', { command: 'export MARK=home' })).status).toBe(200);
    const events: Array<Record<string, unknown>> = [];
    const viewer = await openSocket(wsUrl(g1, '/ws/workspace'), AUTH, (data) => events.push(JSON.parse(data.toString('utf8'))));
    const r = await cluster.call(g2, 'POST', '/api/execute', { command: 'echo "mark=$MARK"' });
    expect(r.json.stdout).toContain('mark=home');
    await eventually(() => events.some((e) => e.type === 'output' && e.line === 'mark=home'), 30_000, 'the output on the default workspace viewer');
    viewer.close();
    await closed(viewer);
  });

  test("OpenSandbox's SDK through a gateway: a create placed on a node, a command, the sandbox listed through the other gateway", async () => {
    const [g1, g2] = cluster.gateways;
    const image = docker ? (process.env.BROKER_IMAGE ?? 'bash-broker-test:latest') : 'cluster-sdk:1';
    const connection = { domain: g1.url, apiKey: CLIENT_TOKEN, disableMetrics: true };
    const sandbox = await Sandbox.create({ connectionConfig: connection, image, metadata: { suite: 'cluster' }, timeoutSeconds: 300 });
    const manager = SandboxManager.create({ connectionConfig: { ...connection, domain: g2.url } });
    try {
      expect(['n1', 'n2']).toContain(nodeOf(sandbox.id));
      const run = await sandbox.commands.run('echo "sdk $((40+2))"');
      expect(run.logs.stdout.map((m) => m.text)).toEqual(['sdk 42']);
      expect(run.exitCode).toBe(0);
      // The SDK reached execd where it reached the lifecycle API: the gateway.
      const endpoint = await cluster.call(g1, 'GET', `/v1/sandboxes/${sandbox.id}/endpoints/44772`);
      expect(endpoint.json.endpoint).toBe(`${new URL(g1.url).host}/sandboxes/${sandbox.id}/execd`);
      const listed = await manager.listSandboxInfos({ metadata: { suite: 'cluster' } });
      expect(listed.items.map((i) => i.id)).toEqual([sandbox.id]);
      expect(listed.pagination).toMatchObject({ page: 1, totalItems: 1, hasNextPage: false });
    } finally {
      await sandbox.kill().catch(() => undefined);
      await sandbox.close();
      await manager.close();
    }
  });

  test('a list of lifecycle sandboxes through a gateway: every node’s, in creation order, paged over the cluster', async () => {
    const [g1, g2] = cluster.gateways;
    // An image no node runs a pool of and none pulls: placement by image has no say, and the
    // gateway spreads the creates by load. (The nodes' own pool image would be placed where it is
    // warm, every create on the same node: test/cluster/clusterImages.test.ts covers that.)
    const image = docker ? 'bash-broker-sandbox:latest' : 'cluster-list:1';
    const ids: string[] = [];
    // Creates until both nodes hold one (placement spreads them; each create names its node).
    for (let i = 0; i < 6 && new Set(ids.map(nodeOf)).size < 2; i++) {
      const r = await cluster.call(g1, 'POST', '/v1/sandboxes', { image: { uri: image }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 300, metadata: { suite: 'list' } });
      expect(r.status).toBe(202);
      ids.push(r.json.id as string);
    }
    try {
      expect(new Set(ids.map(nodeOf))).toEqual(new Set(['n1', 'n2']));
      const all = await cluster.call(g2, 'GET', '/v1/sandboxes?metadata=suite%3Dlist');
      expect(all.status).toBe(200);
      expect((all.json.items as Array<{ id: string }>).map((s) => s.id)).toEqual(ids);
      expect(all.json.pagination).toEqual({ page: 1, pageSize: 20, totalItems: ids.length, totalPages: 1, hasNextPage: false });
      const second = await cluster.call(g2, 'GET', '/v1/sandboxes?metadata=suite%3Dlist&page=2&pageSize=1');
      expect((second.json.items as Array<{ id: string }>).map((s) => s.id)).toEqual([ids[1]]);
      expect(second.json.pagination).toEqual({ page: 2, pageSize: 1, totalItems: ids.length, totalPages: ids.length, hasNextPage: ids.length > 2 });
      // A bad filter is every node's 400, answered once.
      const bad = await cluster.call(g2, 'GET', '/v1/sandboxes?state=Sleeping');
      const direct = await call(cluster.nodes.get('n1')!.url, 'GET', '/v1/sandboxes?state=Sleeping', undefined, { 'x-broker-cluster-token': CLUSTER_TOKEN });
      expect({ status: bad.status, text: bad.text }).toEqual({ status: direct.status, text: direct.text });
    } finally {
      for (const id of ids) await cluster.call(g1, 'DELETE', `/v1/sandboxes/${id}`);
    }
  });

  // Groups are a Docker backend's (the local project has none: the case is not declared there). Not
  // root: loud, and a failure under CI.
  const groupCase = groups || ci ? test : test.skip;
  if (docker) groupCase(`a group sandbox through a gateway: the group on the home node, the sandbox_url leads through the gateway to its node${groups ? '' : ' -- SKIPPED: not root (sandbox disks are loop-mounted)'}`, async () => {
    if (!groups) throw new Error('CI must run this case: not root (sandbox disks are loop-mounted)');
    const [g1, g2] = cluster.gateways;
    expect((await cluster.call(g1, 'POST', '/group/start', {})).json).toEqual({ status: 'started' });
    try {
      const started = await cluster.call(g2, 'POST', '/sandbox/start', { id: 'agent-1', compute_resources: { cpu_cores: 1, ram_gb: 1, disk_gb: 1 } });
      expect(started.status).toBe(200);
      const url = started.json.sandbox_url as string;
      expect(url).toMatch(new RegExp(`^http://${new URL(g2.url).host.replace(/\./g, '\\.')}/groups/n1\\.[0-9a-f]{8}\\.[0-9a-f]+/sandboxes/agent-1$`));
      // Through the other gateway, as the URL names the group, and so the node.
      const other = url.replace(new URL(g2.url).host, new URL(g1.url).host);
      const run = await call(other, 'POST', '/execute', { actions: [{ function: 'bash', args: { command: 'echo "sandbox-$SANDBOX_ID"' } }] }, AUTH);
      expect(run.status).toBe(200);
      // A loaded machine may outlast the action's wait: the rest of the output is read from /output.
      let seen = run.json.observations[0].stdout as string;
      await eventually(
        async () => seen.includes('sandbox-agent-1') || (seen += (await call(other, 'GET', '/output', undefined, AUTH)).json.stdout).includes('sandbox-agent-1'),
        30_000,
        () => `the action's output through the gateway (got ${JSON.stringify(seen)})`,
      );
      expect((await call(url, 'GET', '/health', undefined, AUTH)).json).toEqual({ status: 'healthy' });
      expect((await cluster.call(g1, 'POST', '/sandbox/stop', { id: 'agent-1' })).json).toEqual({ status: 'stopped' });
      expect((await call(url, 'GET', '/output', undefined, AUTH)).status).toBe(404);
    } finally {
      expect((await cluster.call(g2, 'POST', '/group/stop', {})).json).toEqual({ status: 'stopped' });
    }
  });
});
