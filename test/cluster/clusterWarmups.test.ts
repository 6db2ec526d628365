/**
 * Warm-ups through a gateway on a real cluster (docs/images.md, On a cluster): a private etcd, three
 * node brokers on the machine's Docker engine that pull task images from a real registry (Debian's
 * docker-registry on loopback, images built and pushed by the test), and a gateway. POST /images
 * through the gateway warms an image on the node its acquires are placed on (the image's
 * rendezvous node), and the next acquire of it is placed and served warm there; a spread over two
 * nodes warms the image's first two nodes; GET /images through the gateway shows each image on
 * every node that holds it; bad bodies are 400s (403 for an image not allowed) that start nothing
 * on any node. Each wait is on a state GET /images or the gateway's /health shows.
 *
 * Nodes pull and run images on a Docker engine (the local backend runs none):
 * @backend docker
 */
import { useTestCluster, nodeOf, CLUSTER_TOKEN } from '../helpers/cluster';
import { imageSuite } from '../helpers/imageBroker';
import { untilWarmOn } from '../helpers/clusterImages';
import { eventually } from '../helpers/broker';
import { call } from '../../devtools/clusterProcs';
import { rendezvousOrder } from '../../src/cluster/gateway/imagePlacement';
import type { NodeRecord } from '../../src/cluster/clusterStore';

// The registry starts first (its beforeAll is the suite's first), so the nodes are told its address.
const suite = imageSuite();
const NODES = ['n1', 'n2', 'n3'];
const cluster = useTestCluster(NODES, 1, () => ({
  BROKER_IMAGE_ALLOW: `${suite.registry().address}/tasks/*`,
  BROKER_IMAGE_SESSIONS_PER_CONTAINER: '2',
  BROKER_ACQUIRE_TIMEOUT: '180',
  BROKER_SESSION_IDLE_TIMEOUT: '3600',
}));
const TEST_MS = 400_000;

interface ListedImage {
  image: string;
  warm_sessions: number;
  nodes?: Array<{ node_id: string; state: string; warm_sessions: number; warmup: { state: string } | null }>;
}

/** The nodes in `image`'s rendezvous order: where a gateway places it when no node holds it. */
function imageOrder(image: string): string[] {
  return rendezvousOrder(image, NODES.map((id) => ({ node: { node_id: id } as NodeRecord }))).map((f) => f.node.node_id);
}

async function listed(): Promise<ListedImage[]> {
  const r = await cluster.call(cluster.gateways[0], 'GET', '/images');
  expect(r.status).toBe(200);
  return r.json.images as ListedImage[];
}

/** Until GET /images through the gateway shows `image` warmed on exactly the nodes of `warmByNode`, with their warm sessions. */
async function untilListed(image: string, warmByNode: Record<string, number>): Promise<ListedImage> {
  let last: ListedImage | undefined;
  await eventually(
    async () => {
      last = (await listed()).find((i) => i.image === image);
      const nodes = last?.nodes ?? [];
      return (
        nodes.map((n) => n.node_id).sort().join(',') === Object.keys(warmByNode).sort().join(',') &&
        nodes.every((n) => n.state === 'held' && n.warmup?.state === 'warm' && n.warm_sessions === warmByNode[n.node_id])
      );
    },
    240_000,
    () => `GET /images to show ${image} warm on ${JSON.stringify(warmByNode)} (last: ${JSON.stringify(last)})`,
  );
  return last!;
}

describe('warm-ups through a gateway', () => {
  let warmed = '';

  test(
    "POST /images warms the image on the node its acquires go to, and the next acquire is warm there",
    async () => {
      const [g] = cluster.gateways;
      warmed = await suite.coldImage(suite.registry(), 'tasks/warmed');
      const home = imageOrder(warmed)[0];
      const r = await cluster.call(g, 'POST', '/images', { images: [{ image: warmed, sessions: 2 }] });
      expect(r.status).toBe(202);
      expect(r.json.images).toEqual([expect.objectContaining({ image: warmed, sessions: 2, node: home, placement: 'cold', error: null })]);
      await untilListed(warmed, { [home]: 2 });
      await untilWarmOn(cluster, home, warmed, 2);
      const a = await cluster.call(g, 'POST', '/session/acquire', { image: warmed, acquire_timeout: 60 });
      expect(a.status).toBe(200);
      expect(nodeOf(a.json.session_id)).toBe(home);
      expect(a.headers['x-broker-placement']).toBe('warm');
      expect(a.json.image_cost.kind).toBe('warm');
      expect((await cluster.call(g, 'POST', `/session/${a.json.session_id}/execute`, { command: 'bash /repo/run-tests.sh' })).json.stdout).toBe('ok tasks/warmed:v1\n');
      expect((await cluster.call(g, 'POST', `/session/${a.json.session_id}/release`)).status).toBe(200);
    },
    TEST_MS,
  );

  test(
    'a spread of 2 warms the image on its first two nodes, half its sessions each; GET /images shows both',
    async () => {
      const [g] = cluster.gateways;
      const spread = await suite.coldImage(suite.registry(), 'tasks/spread');
      const [first, second] = imageOrder(spread);
      const r = await cluster.call(g, 'POST', '/images', { images: [{ image: spread, sessions: 4, nodes: 2 }] });
      expect(r.status).toBe(202);
      expect(r.json.images.map((v: { node: string; sessions: number; placement: string }) => [v.node, v.sessions, v.placement])).toEqual([
        [first, 2, 'cold'],
        [second, 2, 'cold'],
      ]);
      const view = await untilListed(spread, { [first]: 2, [second]: 2 });
      expect(view.warm_sessions).toBe(4);
      // The first image is still where the first warm-up put it, beside this one.
      expect((await listed()).map((i) => i.image)).toEqual(expect.arrayContaining([warmed, spread]));
    },
    TEST_MS,
  );

  test(
    'bad bodies are 400s, an image not allowed a 403, and none starts anything on any node',
    async () => {
      const [g] = cluster.gateways;
      const registry = suite.registry();
      // Allowed, never pushed: a warm-up of it started anywhere would show (pulling, then failed) in GET /images.
      const fresh = registry.ref('tasks/never-warmed', 'v1');
      const before = (await listed()).map((i) => [i.image, i.nodes?.map((n) => n.node_id)]);
      const refusals: Array<[unknown, RegExp]> = [
        [{ images: [{ image: fresh, nodes: 0 }] }, /'nodes' must be an integer from 1 to 256, got 0/],
        [{ images: [{ image: fresh, nodes: 'two' }] }, /'nodes' must be an integer from 1 to 256/],
        [{ images: [{ image: fresh, nodes: 1.5 }] }, /'nodes' must be an integer from 1 to 256/],
        [{ images: [{ image: fresh, nodes: 257 }] }, /'nodes' must be an integer from 1 to 256/],
        [{ images: [{ image: fresh, sessions: 2, nodes: 4 }] }, /'nodes' asks 4 nodes for .*tasks\/never-warmed:v1: 3 node\(s\) of the cluster may serve it/],
        [{ images: [{ image: fresh }, { image: 'Not A Ref!' }] }, /'image' must be an image reference/],
        [{ images: [{ image: fresh, sessions: -1 }] }, /'sessions' must be an integer from 0/],
        [{ images: [{ image: fresh, node: 2 }] }, /each of 'images' has only 'image', 'sessions' and 'nodes'/],
        [{ images: [] }, /'images' must be a list of 1 to/],
        ['not an object', /Request body must be a JSON object/],
      ];
      for (const [body, detail] of refusals) {
        const r = await cluster.call(g, 'POST', '/images', body);
        expect({ body, status: r.status, code: r.json.code }).toEqual({ body, status: 400, code: 'bad_request' });
        expect(r.json.detail).toMatch(detail);
      }
      // One image allowed, one not: every node given a part checks it before any starts.
      const other = `${registry.address}/other/image:v1`;
      const denied = await cluster.call(g, 'POST', '/images', { images: [{ image: fresh, nodes: 3 }, { image: other }] });
      expect({ status: denied.status, code: denied.json.code }).toEqual({ status: 403, code: 'image_not_allowed' });
      expect(denied.json.detail).toContain(`${registry.address}/other/image`);
      // A node alone keeps its own body: `nodes` is the gateways'.
      const node = cluster.nodes.get('n1')!;
      const direct = await call(node.url, 'POST', '/images', { images: [{ image: fresh, nodes: 1 }] }, { 'x-broker-cluster-token': CLUSTER_TOKEN });
      expect({ status: direct.status, code: direct.json.code, detail: direct.json.detail }).toEqual({ status: 400, code: 'bad_request', detail: "each of 'images' has only 'image' and 'sessions'" });
      expect((await listed()).map((i) => [i.image, i.nodes?.map((n) => n.node_id)])).toEqual(before);
    },
    TEST_MS,
  );
});
