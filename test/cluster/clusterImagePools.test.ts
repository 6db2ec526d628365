/**
 * Placement by image over configured pools, through real gateways and nodes: an acquire (and an
 * acquire_group) naming the image a node's BROKER_POOLS pool runs lands on that node, never on one
 * that does not run it (that node would answer 501 on a backend that runs no images of its own);
 * a node that dies with the pool of an image loses none of the next acquires, which go to the
 * other node that runs it. The nodes publish each pool's image in their record (node/nodeRecord.ts).
 *
 * On the local backend an image is a name a pool carries; the placement is the gateways' whatever
 * the backend (on-demand pulls on a real registry: clusterImages.test.ts, docker):
 * @backend any
 */
import { useTestCluster, nodeOf } from '../helpers/cluster';

const IMAGE_A = 'registry.local:5000/tasks/a:v1';
const IMAGE_B = 'registry.local:5000/tasks/b:v1';
/** n1 and n2 run A in a pool of their own; n3 runs B. */
const pool = (image: string): string => JSON.stringify({ task: { image, containers: 1, sessions_per_container: 2 } });
const cluster = useTestCluster(['n1', 'n2', 'n3'], 2, (id) => ({ BROKER_POOLS: pool(id === 'n3' ? IMAGE_B : IMAGE_A), BROKER_ACQUIRE_TIMEOUT: '60' }));

async function acquireOn(g: number, body: Record<string, unknown>): Promise<string[]> {
  const path = body.n === undefined ? '/session/acquire' : '/session/acquire_group';
  const r = await cluster.call(cluster.gateways[g], 'POST', path, { acquire_timeout: 30, ...body });
  expect(r.status).toBe(200);
  // A node that runs the image: warm, or held while its record still counts a session just released as leased.
  expect(['warm', 'held']).toContain(r.headers['x-broker-placement']);
  const ids: string[] = r.json.sessions ? r.json.sessions.map((s: { session_id: string }) => s.session_id) : [r.json.session_id];
  for (const id of ids) expect((await cluster.call(cluster.gateways[g], 'POST', `/session/${id}/release`)).status).toBe(200);
  return ids.map(nodeOf);
}

describe('placement by the image a configured pool runs', () => {
  test('an acquire and a group of an image land on the node whose pool runs it, through either gateway', async () => {
    for (let i = 0; i < 6; i++) expect(await acquireOn(i % 2, { image: IMAGE_B })).toEqual(['n3']);
    expect(await acquireOn(0, { image: IMAGE_B, n: 2 })).toEqual(['n3', 'n3']);
    const nodesOfA = new Set<string>();
    for (let i = 0; i < 6; i++) for (const n of await acquireOn(i % 2, { image: IMAGE_A })) nodesOfA.add(n);
    for (const n of nodesOfA) expect(['n1', 'n2']).toContain(n);
  }, 120_000);

  test('a node that dies with the pool of an image loses none of the next acquires: the other node running it serves them', async () => {
    await cluster.nodes.get('n1')!.kill9();
    // The gateways list n1 until its lease lapses: acquires placed there move on to n2.
    for (let i = 0; i < 6; i++) expect(await acquireOn(i % 2, { image: IMAGE_A })).toEqual(['n2']);
    await cluster.startNode('n1');
    await cluster.waitMembers(['n1', 'n2', 'n3']);
  }, 120_000);
});
