/**
 * Faults of a cluster, done for real to real processes (nodes on the local backend, and on Docker in
 * the docker project): a node killed with SIGKILL and restarted, a
 * gateway killed with SIGKILL, the store stopped and started again; then a stop that leaves no
 * registration, process or shell. The tests run in order over one cluster (2 nodes, 2 gateways).
 */
import { useTestCluster, CLIENT_TOKEN, SESSIONS_PER_NODE, nodeOf } from '../helpers/cluster';
import type { GatewayHealth } from '../../devtools/clusterProcs';
import type { BrokerProcess } from '../../devtools/brokerProcess';
import { eventually, testBackend } from '../helpers/broker';
import { openSocket } from '../helpers/workspaceClient';

const AUTH = { authorization: `Bearer ${CLIENT_TOKEN}` };

/** The nodes' lease TTL (the default BROKER_NODE_TTL): a dead node leaves the membership within it. */
const NODE_TTL_MS = 5_000;
/** Slack over the TTL for a loaded CI machine: the watch's delivery and /health polls. */
const SLACK_MS = 15_000;

const cluster = useTestCluster();

async function acquire(gateway: BrokerProcess, body: Record<string, unknown> = {}): Promise<string> {
  const r = await cluster.call(gateway, 'POST', '/session/acquire', body);
  if (r.status !== 200) throw new Error(`acquire: ${r.status} ${r.text}`);
  return r.json.session_id as string;
}

/** One lease on each of `nodeIds` (the others acquired on the way are released). */
async function leaseOnEach(gateway: BrokerProcess, nodeIds: string[]): Promise<Map<string, string>> {
  const kept = new Map<string, string>();
  const extra: string[] = [];
  for (let i = 0; i < nodeIds.length * SESSIONS_PER_NODE && kept.size < nodeIds.length; i++) {
    const id = await acquire(gateway);
    if (kept.has(nodeOf(id))) extra.push(id);
    else kept.set(nodeOf(id), id);
  }
  for (const id of extra) await cluster.call(gateway, 'POST', `/session/${id}/release`);
  expect([...kept.keys()].sort()).toEqual([...nodeIds].sort());
  return kept;
}

async function waitListed(gateway: BrokerProcess, nodeIds: string[], timeoutMs: number): Promise<void> {
  let last: GatewayHealth | null = null;
  await eventually(
    async () => {
      last = await cluster.health(gateway);
      return last.nodes.map((n) => n.node_id).sort().join(',') === [...nodeIds].sort().join(',');
    },
    timeoutMs,
    () => `gateway ${gateway.url} to list exactly ${nodeIds.join(',')} (last: ${JSON.stringify(last)})`,
  );
}

/**
 * A workspace created through `gateway` that its id says is on `nodeId`, once the gateway sees one
 * free session on each node: a create is placed on a node with a free session, and the gateway counts
 * the one it took, so a second create goes to the other node. The other made on the way is ended.
 */
async function workspaceOn(gateway: BrokerProcess, nodeId: string): Promise<string> {
  let last: GatewayHealth | null = null;
  await eventually(
    async () => (last = await cluster.health(gateway)).nodes.every((n) => n.pools.default.available === 1),
    30_000,
    () => `one free session on each node (last: ${JSON.stringify(last)})`,
  );
  const made: string[] = [];
  for (let i = 0; i < 2 && !made.some((id) => nodeOf(id) === nodeId); i++) {
    const r = await cluster.call(gateway, 'POST', '/workspaces', {});
    if (r.status !== 201) throw new Error(`create a workspace: ${r.status} ${r.text}`);
    made.push(r.json.workspace_id as string);
  }
  for (const id of made.filter((w) => nodeOf(w) !== nodeId)) await cluster.call(gateway, 'DELETE', `/workspaces/${id}`);
  const on = made.find((id) => nodeOf(id) === nodeId);
  if (!on) throw new Error(`no workspace was placed on ${nodeId}: ${made.join(', ')}`);
  return on;
}

let lostId = '';

describe('faults of a cluster of 2 nodes and 2 gateways', () => {
  test("kill -9 of a node: its sessions answer 410 node_lost naming it, the other's go on, acquires land on the survivor, the gateways drop it within the TTL", async () => {
    const [g1, g2] = cluster.gateways;
    const leases = await leaseOnEach(g1, ['n1', 'n2']);
    lostId = leases.get('n1')!;
    const kept = leases.get('n2')!;
    await cluster.call(g1, 'POST', `/session/${kept}/execute`, { command: 'export EPISODE=7' });
    // A workspace on n1 (a create is placed: one that lands on n2 is ended, and the next finds n1),
    // and a viewer of it through a gateway.
    const workspace = await workspaceOn(g1, 'n1');
    const viewer = await openSocket(`${g2.url.replace(/^http/, 'ws')}/workspaces/${workspace}/ws/workspace`, AUTH);
    const viewerClosed = new Promise<void>((resolve) => viewer.once('close', () => resolve()));
    await cluster.nodes.get('n1')!.kill9();

    // At once, before the lease runs out: the node refuses connections, and its ids are lost.
    const lost = await cluster.call(g1, 'POST', `/session/${lostId}/execute`, { command: 'true' });
    expect(lost.status).toBe(410);
    expect(Object.keys(lost.json)).toEqual(['detail', 'code']);
    expect(lost.json.code).toBe('node_lost');
    expect(lost.json.detail).toContain("node 'n1'");
    expect((await cluster.call(g2, 'POST', `/session/${kept}/execute`, { command: 'echo $EPISODE' })).json.stdout).toBe('7\n');
    // The workspace's calls and WebSockets too; the viewer's tunnel closed with its node.
    await viewerClosed;
    const lostWorkspace = await cluster.call(g2, 'POST', `/workspaces/${workspace}/api/execute`, { command: 'true' });
    expect({ status: lostWorkspace.status, code: lostWorkspace.json.code }).toEqual({ status: 410, code: 'node_lost' });
    expect(lostWorkspace.json.detail).toContain(`'${workspace}' was held by node 'n1'`);
    const refused = await openSocket(`${g1.url.replace(/^http/, 'ws')}/workspaces/${workspace}/ws/workspace/terminal`, AUTH).then(
      () => null,
      (err: { status?: number; body?: string }) => err,
    );
    expect(refused?.status).toBe(410);
    expect(JSON.parse(refused?.body ?? '{}').code).toBe('node_lost');

    for (const gateway of [g1, g2]) await waitListed(gateway, ['n2'], NODE_TTL_MS + SLACK_MS);
    const left = await cluster.call(g2, 'POST', `/session/${lostId}/release`);
    expect(left.status).toBe(410);
    expect(left.json.detail).toMatch(/node 'n1', which has left the cluster/);

    // The survivor has one free session: the next acquire lands there, and the one after finds the cluster full.
    const placed = await acquire(g1, { acquire_timeout: 5 });
    expect(nodeOf(placed)).toBe('n2');
    const full = await cluster.call(g2, 'POST', '/session/acquire', { acquire_timeout: 1 });
    expect(full.status).toBe(503);
    expect(full.json.code).toBe('pool_exhausted');
    for (const id of [placed, kept]) expect((await cluster.call(g2, 'POST', `/session/${id}/release`)).status).toBe(200);
  });

  test('a restarted node rejoins with a new incarnation: the old ids answer 410, acquires land on it again', async () => {
    const [g1] = cluster.gateways;
    await cluster.startNode('n1');
    await cluster.waitMembers(['n1', 'n2']);
    const old = await cluster.call(g1, 'POST', `/session/${lostId}/execute`, { command: 'true' });
    expect(old.status).toBe(410);
    expect(old.json.detail).toMatch(/node 'n1', which restarted since it minted it/);
    // On Docker the killed node's container outlived it: the new one swept it before it warmed.
    if (testBackend === 'docker') expect(cluster.containersOf('n1')).toHaveLength(1);
    const leases = await leaseOnEach(g1, ['n1', 'n2']);
    expect(leases.get('n1')!.split('.')[1]).not.toBe(lostId.split('.')[1]);
    for (const id of leases.values()) await cluster.call(g1, 'POST', `/session/${id}/release`);
    await cluster.waitMembers(['n1', 'n2']);
  });

  test('kill -9 of a gateway: the client carries on through the other with its session ids', async () => {
    const [g1, g2] = cluster.gateways;
    const id = await acquire(g1);
    await cluster.call(g1, 'POST', `/session/${id}/execute`, { command: 'cd /tmp && STEP=1' });
    await g1.kill9();
    const r = await cluster.call(g2, 'POST', `/session/${id}/execute`, { command: 'echo "$PWD $STEP"' });
    expect(r.json.stdout).toBe('/tmp 1\n');
    expect((await cluster.call(g2, 'POST', `/session/${id}/release`)).status).toBe(200);
  });

  test('the store stopped: a gateway routes existing ids and places from the last membership, and heals when it returns', async () => {
    const g2 = cluster.gateways[1];
    await cluster.waitMembers(['n1', 'n2']);
    const id = await acquire(g2);
    await cluster.etcd.stop();
    let last: GatewayHealth | null = null;
    // Past the nodes' TTL without a heartbeat seen: the membership stands all the same.
    await eventually(
      async () => {
        last = await cluster.health(g2);
        return !last.store_connected && last.nodes.length === 2 && last.nodes.every((n) => n.heartbeat_age_ms > NODE_TTL_MS);
      },
      NODE_TTL_MS + SLACK_MS,
      () => `the gateway to keep both nodes past their TTL without the store (last: ${JSON.stringify(last)})`,
    );
    expect((await cluster.call(g2, 'POST', `/session/${id}/execute`, { command: 'echo routed' })).json.stdout).toBe('routed\n');
    const placed = await acquire(g2, { acquire_timeout: 5 });
    expect((await cluster.call(g2, 'POST', `/session/${placed}/execute`, { command: 'echo placed' })).json.stdout).toBe('placed\n');
    // An acquire with a request_id is placed by the gateway alone while its placement cannot be recorded.
    const pinned = await acquire(g2, { acquire_timeout: 5, request_id: 'while-the-store-is-away' });
    for (const s of [id, placed, pinned]) expect((await cluster.call(g2, 'POST', `/session/${s}/release`)).status).toBe(200);

    await cluster.etcd.run();
    await eventually(
      async () => {
        last = await cluster.health(g2);
        return last.store_connected && last.nodes.length === 2 && last.nodes.every((n) => n.heartbeat_age_ms < NODE_TTL_MS);
      },
      60_000,
      () => `the gateway to see the store and fresh heartbeats again (last: ${JSON.stringify(last)})`,
    );
    await cluster.waitMembers(['n1', 'n2']);
  });

  test('stopped, nothing is left: no registration, no node or gateway process, no shell', async () => {
    const g2 = cluster.gateways[1];
    for (const node of cluster.nodes.values()) await node.stop();
    // A node that stops revokes its lease: the gateway sees it leave at once, not after the TTL.
    await waitListed(g2, [], SLACK_MS);
    expect(cluster.registrations()).toEqual([]);
    await g2.stop();
    expect(cluster.started.filter((p) => p.alive).map((p) => p.name)).toEqual([]);
    expect(cluster.leftovers()).toEqual([]);
  });
});
