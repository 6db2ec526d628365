/**
 * Snapshots on a real cluster (docs/snapshots.md, On a cluster): a private etcd, two node brokers on
 * the machine's Docker engine (per-lease isolation on, each node one container of two sessions) and
 * one gateway. A snapshot's id names the node of the session it was taken of; an acquire from it
 * through the gateway lands on that node (though the other node has more room) and sees the files,
 * and beyond that node's room it answers as a full node does; a lifecycle create from it lands there
 * too; the lists through the gateway are every node's; a delete reaches the snapshot's node; and once
 * that node is killed, its snapshot answers 410 in each API's own format.
 *
 * Snapshots are layers of isolated sessions, which the docker backend alone keeps:
 * @backend docker
 */
import { useTestCluster, nodeOf } from '../helpers/cluster';
import { eventually, type HttpResult } from '../helpers/broker';

const cluster = useTestCluster(['n1', 'n2'], 1);
const TEST_MS = 180_000;

/** The session a test leased on each node, by node id. */
const leases = new Map<string, string>();
/** The snapshot taken of each node's lease, by node id. */
const snaps = new Map<string, string>();

function call(method: string, path: string, body?: unknown): Promise<HttpResult> {
  return cluster.call(cluster.gateways[0], method, path, body);
}

async function ok(method: string, path: string, body: unknown, status: number): Promise<HttpResult> {
  const r = await call(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r;
}

async function run(id: string, command: string): Promise<string> {
  return (await ok('POST', `/session/${id}/execute`, { command }, 200)).json.stdout as string;
}

describe('snapshots on a cluster', () => {
  test(
    "a snapshot's id names its node; an acquire from it lands there and sees its files, and beyond that node's room answers as a full node",
    async () => {
      // One lease on each node (the gateway places the second where more sessions are free).
      const extra: string[] = [];
      for (let i = 0; i < 4 && leases.size < 2; i++) {
        const id = (await ok('POST', '/session/acquire', {}, 200)).json.session_id as string;
        if (leases.has(nodeOf(id))) extra.push(id);
        else leases.set(nodeOf(id), id);
      }
      for (const id of extra) await ok('POST', `/session/${id}/release`, undefined, 200);
      expect([...leases.keys()].sort()).toEqual(['n1', 'n2']);

      for (const [node, id] of leases) {
        await run(id, `echo "from ${node}" >/etc/branch-mark && mkdir -p sub && cd sub && BRANCH=${node}`);
        const snap = await ok('POST', `/session/${id}/snapshot`, {}, 201);
        const snapId = snap.json.snapshot_id as string;
        expect(snapId).toMatch(new RegExp(`^${node}\\.[0-9a-f]{8}\\.snap-[0-9a-f]{16}$`));
        snaps.set(node, snapId);
      }

      // n1 has one session free, n2 one as well: from n1's snapshot, always n1, however placement would choose.
      for (const node of ['n1', 'n2']) {
        const fork = await ok('POST', '/session/acquire', { snapshot: snaps.get(node) }, 200);
        const forkId = fork.json.session_id as string;
        expect(nodeOf(forkId)).toBe(node);
        expect(await run(forkId, 'cat /etc/branch-mark; basename "$PWD"; echo "$BRANCH"')).toBe(`from ${node}\nsub\n${node}\n`);
        // Its node is full now (the parent and this fork): one more answers as a full node does.
        const more = await call('POST', '/session/acquire', { snapshot: snaps.get(node), acquire_timeout: 1 });
        expect({ status: more.status, code: more.json.code }).toEqual({ status: 503, code: 'pool_exhausted' });
        await ok('POST', `/session/${forkId}/release`, undefined, 200);
      }
    },
    TEST_MS,
  );

  test(
    'a lifecycle create from a snapshotId lands on its node, and GET /v1/snapshots/{id} is answered there',
    async () => {
      // n1's lease ends (its snapshot stays): n1 has more sessions free, where a placed create would go.
      await ok('POST', `/session/${leases.get('n1')}/release`, undefined, 200);
      leases.delete('n1');
      await eventually(async () => (await cluster.health(cluster.gateways[0])).nodes.find((n) => n.node_id === 'n1')?.pools.default?.available === 2, 30_000, () => 'the gateway to see both sessions of n1 free');
      const snapId = snaps.get('n2')!;
      const seen = await ok('GET', `/v1/snapshots/${snapId}`, undefined, 200);
      expect(seen.json).toMatchObject({ id: snapId, sandboxId: leases.get('n2') });
      const created = await ok('POST', '/v1/sandboxes', { snapshotId: snapId, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600, resourceLimits: {} }, 202);
      expect(nodeOf(created.json.id)).toBe('n2');
      await ok('DELETE', `/v1/sandboxes/${created.json.id}`, undefined, 204);
    },
    TEST_MS,
  );

  test(
    "GET /snapshots and /v1/snapshots are every node's; a DELETE reaches the snapshot's node",
    async () => {
      const one = (await ok('GET', '/snapshots', undefined, 200)).json as { budget_bytes: number; used_bytes: number; snapshots: Array<{ snapshot_id: string; bytes: number }> };
      expect(one.snapshots.map((s) => s.snapshot_id).sort()).toEqual([snaps.get('n1'), snaps.get('n2')].sort());
      expect(one.used_bytes).toBe(one.snapshots.reduce((sum, s) => sum + s.bytes, 0));
      const paged = (await ok('GET', '/v1/snapshots?state=Ready&pageSize=1', undefined, 200)).json as { items: Array<{ id: string }>; pagination: { totalItems: number } };
      expect(paged.items).toHaveLength(1);
      expect(paged.pagination.totalItems).toBe(2);
      // A second snapshot on n2, deleted through the gateway: its node answers, and it is gone from the list.
      const second = (await ok('POST', `/session/${leases.get('n2')}/snapshot`, {}, 201)).json.snapshot_id as string;
      await ok('DELETE', `/snapshots/${second}`, undefined, 200);
      await ok('DELETE', `/v1/snapshots/${snaps.get('n2')}`, undefined, 204);
      const left = (await ok('GET', '/snapshots', undefined, 200)).json as { snapshots: Array<{ snapshot_id: string }> };
      expect(left.snapshots.map((s) => s.snapshot_id)).toEqual([snaps.get('n1')]);
    },
    TEST_MS,
  );

  test(
    'a snapshot whose node is killed is gone: 410 in each API’s own format, and the list is the nodes left',
    async () => {
      const snapId = snaps.get('n1')!;
      await cluster.nodes.get('n1')!.kill9();
      try {
        await expectGone(snapId);
      } finally {
        // Whatever the checks found: n2's lease ends, and the killed node comes back (its start sweeps the containers and layers it left).
        for (const id of leases.values()) await call('POST', `/session/${id}/release`);
        await cluster.startNode('n1');
        await cluster.waitMembers(['n1', 'n2']);
      }
    },
    TEST_MS,
  );
});

/** Every call that names the snapshot `snapId` of the killed node n1 answers 410 in its API's format; the list is n2's. */
async function expectGone(snapId: string): Promise<void> {
  const gone = new RegExp(`snapshot '${snapId.replace(/\./g, '\\.')}' lived on node 'n1', which .*: the snapshot is gone with its node; take a new snapshot`);
  const acquired = await call('POST', '/session/acquire', { snapshot: snapId });
  expect(acquired.status).toBe(410);
  expect(acquired.json).toEqual({ detail: expect.stringMatching(gone), code: 'node_lost' });
  const deleted = await call('DELETE', `/snapshots/${snapId}`);
  expect({ status: deleted.status, code: deleted.json.code }).toEqual({ status: 410, code: 'node_lost' });
  const lifecycle = await call('DELETE', `/v1/snapshots/${snapId}`);
  expect(lifecycle.status).toBe(410);
  expect(lifecycle.json).toEqual({ code: 'RUNTIME_ERROR', message: expect.stringMatching(gone) });
  const created = await call('POST', '/v1/sandboxes', { snapshotId: snapId, timeout: 600, resourceLimits: {} });
  expect({ status: created.status, code: created.json.code }).toEqual({ status: 410, code: 'RUNTIME_ERROR' });
  expect(((await ok('GET', '/snapshots', undefined, 200)).json as { snapshots: unknown[] }).snapshots).toEqual([]);
}
