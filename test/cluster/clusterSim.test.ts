/**
 * The building blocks of the simulation of a large cluster (bench/cluster/sim/): simulated nodes
 * register in a real etcd with the nodes' own heartbeat code, a real gateway lists them and routes
 * acquires, executes and releases to them by id, and they leave the membership both ways the
 * simulation measures (a revoked lease, a lease left to lapse). The simulation itself is a benchmark
 * and runs apart (npm run bench:cluster-sim).
 *
 * Simulated nodes run no backend:
 * @backend any
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { TestEtcd } from '../../devtools/etcd';
import { call, closeClients } from '../../devtools/clusterProcs';
import { BrokerProcess } from '../../devtools/brokerProcess';
import { eventually } from '../helpers/broker';
import { EtcdClusterStore } from '../../src/cluster/store/etcdClusterStore';
import { SimNode } from '../../bench/cluster/sim/simNode';

const TOKEN = `sim-test-${randomBytes(12).toString('hex')}`;
const PREFIX = `/bash-broker-sim-test-${process.pid}/`;
const SESSIONS = 2;

let etcd: TestEtcd;
let store: EtcdClusterStore;
let gateway: BrokerProcess;
const nodes: SimNode[] = [];

async function listed(): Promise<string[]> {
  const r = await call(gateway.url, 'GET', '/cluster/targets');
  return (r.json as { labels: { node: string } }[]).map((t) => t.labels.node).sort();
}

function registrations(): string[] {
  const out = execFileSync('etcdctl', ['--endpoints', etcd.endpoint, 'get', '--prefix', `${PREFIX}nodes/`, '--keys-only'], { encoding: 'utf8', env: { ...process.env, ETCDCTL_API: '3' } });
  return out.split('\n').filter((l) => l.trim() !== '');
}

beforeAll(async () => {
  etcd = await TestEtcd.start();
  store = new EtcdClusterStore({ endpoints: [etcd.endpoint], keyPrefix: PREFIX });
  gateway = await BrokerProcess.start('gateway', {
    BROKER_ROLE: 'gateway',
    BROKER_ETCD_ENDPOINTS: etcd.endpoint,
    BROKER_CLUSTER_TOKEN: TOKEN,
    BROKER_CLUSTER_PREFIX: PREFIX,
    BROKER_NODE_HEARTBEAT: '0.5',
    HOST: '127.0.0.1',
    PORT: '0',
  });
  // After the gateway: its start compiles the broker once, synchronously, and would hold up this
  // process's heartbeats meanwhile.
  for (const nodeId of ['sim-1', 'sim-2', 'sim-3']) {
    const node = new SimNode({ nodeId, sessions: SESSIONS, store, clusterToken: TOKEN, heartbeatMs: 500, ttlSeconds: 3 });
    nodes.push(node);
    await node.start();
  }
}, 240_000);

afterAll(async () => {
  await gateway?.stop();
  await Promise.all(nodes.map((n) => n.close()));
  await store?.close();
  await etcd?.destroy();
  await closeClients();
}, 120_000);

describe('the simulation of a large cluster: its building blocks', () => {
  test('simulated nodes register, a real gateway lists them and routes acquire, execute and release to the node each id names', async () => {
    await eventually(async () => (await listed()).join() === 'sim-1,sim-2,sim-3', 30_000, 'the gateway to list the three simulated nodes');
    expect(registrations()).toHaveLength(3);
    // Every session of the three: the gateway moves on from a full node, so all three serve.
    const ids: string[] = [];
    for (let i = 0; i < 3 * SESSIONS; i++) {
      const r = await call(gateway.url, 'POST', '/session/acquire', { acquire_timeout: 5 });
      expect(r.status).toBe(200);
      ids.push(r.json.session_id);
    }
    expect(new Set(ids.map((id) => id.split('.')[0]))).toEqual(new Set(['sim-1', 'sim-2', 'sim-3']));
    for (const node of nodes) expect(node.inUse).toBe(SESSIONS);
    for (const id of ids) {
      const r = await call(gateway.url, 'POST', `/session/${id}/execute`, { command: 'true' });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ status: 'Success', stdout: '', stderr: '', return_code: 0 });
      expect((await call(gateway.url, 'POST', `/session/${id}/release`, {})).json).toEqual({ status: 'released' });
    }
    for (const node of nodes) expect(node.inUse).toBe(0);
    // Like a real node, a simulated one answers the cluster only.
    expect((await call(nodes[0].url, 'POST', '/session/acquire', {})).status).toBe(401);
  });

  test('a simulated node leaves the membership by revoking its lease, and by falling silent until the lease lapses', async () => {
    await nodes[0].leave();
    await eventually(async () => (await listed()).join() === 'sim-2,sim-3', 30_000, 'the gateway to drop sim-1 (lease revoked)');
    // Silent: no more beats and no revocation; only the lease's end removes its registration.
    await nodes[1].crash();
    await eventually(async () => (await listed()).join() === 'sim-3', 30_000, 'the gateway to drop sim-2 (lease lapsed)');
    expect(registrations()).toEqual([`${PREFIX}nodes/sim-3`]);
  });
});
