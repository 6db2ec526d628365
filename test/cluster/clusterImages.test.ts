/**
 * Placement by image on a real cluster (docs/images.md, On a cluster): a private etcd, three node
 * brokers on the machine's Docker engine that pull task images on demand from a real registry
 * (Debian's docker-registry on loopback, images built and pushed by the test), and two gateways.
 * The second episode of an image lands where the first warmed it, through either gateway; an
 * acquire_group of an image lands whole on the node that holds it; a request_id retry and a
 * lifecycle create of the image follow the same rule; a node killed with its warm sessions loses
 * none of the next acquires. Each wait is on a state the gateways' /health shows.
 *
 * Nodes pull and run images on a Docker engine (the local backend runs none: an acquire by image
 * other than a configured pool's is a 501 there):
 * @backend docker
 */
import { useTestCluster, nodeOf } from '../helpers/cluster';
import { imageSuite } from '../helpers/imageBroker';
import { metricValue, type HttpResult } from '../helpers/broker';
import { untilWarmOn } from '../helpers/clusterImages';
import type { BrokerProcess } from '../../devtools/brokerProcess';

// The registry starts first (its beforeAll is the suite's first), so the nodes are told its address.
const suite = imageSuite();
const cluster = useTestCluster(['n1', 'n2', 'n3'], 2, () => ({
  BROKER_IMAGE_ALLOW: `${suite.registry().address}/tasks/*`,
  BROKER_IMAGE_SESSIONS_PER_CONTAINER: '2',
  BROKER_ACQUIRE_TIMEOUT: '180',
  BROKER_SESSION_IDLE_TIMEOUT: '3600',
}));
/** A pull and a first container on a loaded 2-core machine: the acquire's own bound, not a timing check. */
const FIRST = { acquire_timeout: 180 };
const TEST_MS = 400_000;

async function acquire(g: BrokerProcess, body: Record<string, unknown>): Promise<HttpResult> {
  const r = await cluster.call(g, 'POST', '/session/acquire', { ...FIRST, ...body });
  if (r.status !== 200) throw new Error(`acquire: ${r.status} ${r.text}`);
  return r;
}

async function release(g: BrokerProcess, id: string): Promise<void> {
  expect((await cluster.call(g, 'POST', `/session/${id}/release`)).status).toBe(200);
}

/** Until every live gateway sees `image` with `warm` free sessions at least on `nodeId`. */
function untilWarm(nodeId: string, image: string, warm = 1): Promise<void> {
  return untilWarmOn(cluster, nodeId, image, warm);
}

async function placements(g: BrokerProcess, tier: string): Promise<number> {
  return metricValue((await cluster.call(g, 'GET', '/metrics')).text, 'broker_gateway_image_placements_total', { tier });
}

describe('placement by image on a cluster', () => {
  let image = '';
  let home = '';

  test(
    'the second episode of an image lands where the first warmed it, through either gateway',
    async () => {
      const [g1, g2] = cluster.gateways;
      image = await suite.coldImage(suite.registry(), 'tasks/placed');
      const first = await acquire(g1, { image });
      home = nodeOf(first.json.session_id);
      expect(first.headers['x-broker-placement']).toBe('cold');
      expect(['pulled', 'started']).toContain(first.json.image_cost.kind);
      expect((await cluster.call(g1, 'POST', `/session/${first.json.session_id}/execute`, { command: 'bash /repo/run-tests.sh' })).json.stdout).toBe('ok tasks/placed:v1\n');
      await release(g1, first.json.session_id);
      await untilWarm(home, image);
      for (const g of [g1, g2, g1, g2]) {
        const r = await acquire(g, { image });
        expect(nodeOf(r.json.session_id)).toBe(home);
        expect(r.json.image_cost.kind).toBe('warm');
        expect(r.headers['x-broker-placement']).toBe('warm');
        await release(g, r.json.session_id);
        await untilWarm(home, image, 2);
      }
      expect(await placements(g1, 'warm')).toBe(2);
      expect(await placements(g2, 'warm')).toBe(2);
      expect(((await cluster.health(g1)) as unknown as { image_placements: object }).image_placements).toMatchObject({ warm: 2, cold: 1 });
    },
    TEST_MS,
  );

  test(
    'an acquire_group of the image lands whole on the node that holds it, grown there; a request_id retry and a lifecycle create follow it',
    async () => {
      const [g1, g2] = cluster.gateways;
      // Three sessions: the home node has two warm, and grows a container for the third (no pull).
      const group = await cluster.call(g1, 'POST', '/session/acquire_group', { ...FIRST, image, n: 3 });
      expect(group.status).toBe(200);
      expect(group.json.sessions.map((s: { session_id: string }) => nodeOf(s.session_id))).toEqual([home, home, home]);
      expect(group.headers['x-broker-placement']).toBe('held');
      for (const s of group.json.sessions) await release(g1, s.session_id);
      await untilWarm(home, image, 2);

      const once = await acquire(g1, { image, request_id: 'placed-retry' });
      const again = await acquire(g2, { image, request_id: 'placed-retry' });
      expect(again.json.session_id).toBe(once.json.session_id);
      expect(nodeOf(once.json.session_id)).toBe(home);
      await release(g1, once.json.session_id);
      await untilWarm(home, image, 2);

      const body = { image: { uri: image }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600, resourceLimits: {} };
      const created = await cluster.call(g2, 'POST', '/v1/sandboxes', body);
      expect(created.status).toBe(202);
      expect(nodeOf(created.json.id)).toBe(home);
      expect((await cluster.call(g2, 'DELETE', `/v1/sandboxes/${created.json.id}`)).status).toBe(204);
    },
    TEST_MS,
  );

  test(
    'a node killed with its warm sessions loses none of the next acquires: they land on another node, which is warm after',
    async () => {
      const [g1, g2] = cluster.gateways;
      await untilWarm(home, image);
      await cluster.nodes.get(home)!.kill9();
      // The gateways still list it (its lease outlives it): the acquire is placed there, not sent, and moves on.
      const next = await acquire(g1, { image });
      const survivor = nodeOf(next.json.session_id);
      expect(survivor).not.toBe(home);
      expect(['pulled', 'started']).toContain(next.json.image_cost.kind);
      await release(g1, next.json.session_id);
      await untilWarm(survivor, image);
      const warm = await acquire(g2, { image });
      expect(nodeOf(warm.json.session_id)).toBe(survivor);
      expect(warm.json.image_cost.kind).toBe('warm');
      await release(g2, warm.json.session_id);
      // The killed node back: its start sweeps the containers it left, and nothing is left at the end.
      await cluster.startNode(home);
      await cluster.waitMembers(['n1', 'n2', 'n3']);
    },
    TEST_MS,
  );
});
