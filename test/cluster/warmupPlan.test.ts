/**
 * A warm-up through a gateway, without a cluster: where its images go (cluster/gateway/warmupPlan.ts:
 * the acquires' rule, a spread over the image's next nodes, sessions split, room counted across the
 * warm-up's images, refusals) and how GET /images merges the nodes' reports
 * (cluster/gateway/imageReports.ts).
 * @backend any
 */
import { evenShares, planWarmups, type WarmupAsk } from '../../src/cluster/gateway/warmupPlan';
import { rendezvousOrder } from '../../src/cluster/gateway/imagePlacement';
import { mergeImageReports } from '../../src/cluster/gateway/imageReports';
import type { ImagesReport, ImageView } from '../../src/core/images/imageViews';
import type { NodeRecord } from '../../src/cluster/clusterStore';
import { BadRequestError } from '../../src/common/errors';
import { node } from '../helpers/imageNodes';

const IDS = ['a', 'b', 'c', 'd'];
const image = (i: number): string => `reg.local:5000/tasks/t${i}:v1`;
const order = (img: string, ids = IDS): string[] => rendezvousOrder(img, ids.map((id) => ({ node: node(id) }))).map((f) => f.node.node_id);

function plan(asks: Array<Partial<WarmupAsk> & { image: string }>, nodes: NodeRecord[] = IDS.map((id) => node(id)), exclude: string[] = []) {
  const full = asks.map((a) => ({ sessions: 1, nodes: 1, ...a }));
  return planWarmups(full, nodes, new Set(exclude), () => 0).map((p) => [p.image, p.nodeId, p.sessions, p.tier]);
}

describe('where a warm-up goes', () => {
  it('splits sessions as evenly as they go, the first nodes taking one more', () => {
    expect(evenShares(5, 2)).toEqual([3, 2]);
    expect(evenShares(1, 3)).toEqual([1, 0, 0]);
    expect(evenShares(0, 2)).toEqual([0, 0]);
  });

  it("warms an image no node holds on its rendezvous node, and a spread on the image's next nodes", () => {
    const [first, second, third] = order(image(1));
    expect(plan([{ image: image(1), sessions: 4 }])).toEqual([[image(1), first, 4, 'cold']]);
    expect(plan([{ image: image(1), sessions: 5, nodes: 3 }])).toEqual([
      [image(1), first, 2, 'cold'],
      [image(1), second, 2, 'cold'],
      [image(1), third, 1, 'cold'],
    ]);
  });

  it('goes where the image is warm, then where it is held, before its rendezvous nodes', () => {
    const [first, , third, fourth] = order(image(1));
    const nodes = IDS.map((id) => node(id, { top: id === fourth ? [{ image: image(1), warm: 2, containers: 1 }] : id === third ? [{ image: image(1) }] : [] }));
    expect(plan([{ image: image(1), sessions: 4, nodes: 3 }], nodes)).toEqual([
      [image(1), fourth, 2, 'warm'],
      [image(1), third, 1, 'held'],
      [image(1), first, 1, 'cold'],
    ]);
  });

  it("counts the containers it gives a node against that node's room for the warm-up's next images", () => {
    // Two images whose first node is the same, which has room for one container of two sessions.
    const first = order(image(0))[0];
    const other = [...Array(64).keys()].slice(1).find((i) => order(image(i))[0] === first)!;
    const nodes = IDS.map((id) => node(id, { room: id === first ? 1 : 4 }));
    expect(plan([{ image: image(0), sessions: 2 }, { image: image(other), sessions: 2 }], nodes)).toEqual([
      [image(0), first, 2, 'cold'],
      [image(other), order(image(other))[1], 2, 'cold'],
    ]);
  });

  it('leaves out the nodes it is told to (gone) and the unhealthy, and refuses more nodes than may serve the image', () => {
    const [first, second, third, fourth] = order(image(1));
    const nodes = IDS.map((id) => node(id, { health: id === second ? 'unhealthy' : 'healthy' }));
    expect(plan([{ image: image(1), nodes: 2 }], nodes, [first])).toEqual([
      [image(1), third, 1, 'cold'],
      [image(1), fourth, 0, 'cold'],
    ]);
    expect(() => plan([{ image: image(1), nodes: 3 }], nodes, [first])).toThrow(BadRequestError);
    expect(() => plan([{ image: image(1), nodes: 3 }], nodes, [first])).toThrow(`'nodes' asks 3 nodes for ${image(1)}: 2 node(s) of the cluster may serve it`);
  });

  it('sends an image no node may serve to its first node, once, whose check refuses it', () => {
    const nodes = IDS.map((id) => node(id, { onDemand: false }));
    expect(plan([{ image: image(1), sessions: 4, nodes: 2 }], nodes)).toEqual([[image(1), order(image(1))[0], 2, null]]);
  });
});

function view(img: string, fields: Partial<ImageView>): ImageView {
  return { image: img, state: 'held', pull: null, disk_bytes: 100, containers: 0, warm_sessions: 0, leased_sessions: 0, acquires_waiting: 0, uses: 0, last_used_at_ms: null, warmup: null, error: null, ...fields };
}

function report(images: ImageView[], fields: Partial<ImagesReport> = {}): ImagesReport {
  return { on_demand: true, pulls_in_flight: 0, images_held: 0, disk_used_bytes: 100, disk_budget_bytes: 1000, evictions: 1, room: { containers_free: 3, sessions_per_container: 2, max_containers_per_image: 4 }, images, ...fields };
}

describe("GET /images through a gateway: the nodes' reports merged", () => {
  it('shows each image once, its counts summed over the nodes, with each node its own view of it', () => {
    const pull = { bytes_total: 50, bytes_done: 10, started_at_ms: 7 };
    const merged = mergeImageReports([
      { nodeId: 'a', report: report([view(image(1), { containers: 1, warm_sessions: 2, uses: 3, last_used_at_ms: 5, warmup: { sessions: 2, state: 'warm' } })], { images_held: 1 }) },
      { nodeId: 'b', report: report([view(image(1), { state: 'pulling', pull, disk_bytes: null, warmup: { sessions: 2, state: 'pulling' } }), view(image(2), { uses: 9 })], { pulls_in_flight: 1, images_held: 1 }) },
    ]);
    expect(merged.images.map((i) => i.image)).toEqual([image(2), image(1)]);
    const one = merged.images[1];
    expect(one).toMatchObject({ state: 'held', pull, disk_bytes: 100, containers: 1, warm_sessions: 2, uses: 3, last_used_at_ms: 5, warmup: { sessions: 4, state: 'pulling' } });
    expect(one.nodes.map((n) => [n.node_id, n.state, n.warm_sessions])).toEqual([
      ['a', 'held', 2],
      ['b', 'pulling', 0],
    ]);
    expect(merged).toMatchObject({ on_demand: true, pulls_in_flight: 1, images_held: 2, disk_used_bytes: 200, disk_budget_bytes: 2000, evictions: 2, room: { containers_free: 6, sessions_per_container: 2, max_containers_per_image: 4 } });
    expect(merged.nodes.map((n) => [n.node_id, n.pulls_in_flight])).toEqual([
      ['a', 0],
      ['b', 1],
    ]);
  });

  it('is a failure only where no node holds or pulls the image, and empty for a cluster of nodes that pull nothing', () => {
    const failed = { code: 'image_not_found', detail: 'no such tag' };
    const merged = mergeImageReports([{ nodeId: 'a', report: report([view(image(3), { state: 'failed', disk_bytes: null, error: failed })]) }]);
    expect(merged.images[0]).toMatchObject({ state: 'failed', disk_bytes: null, pull: null, error: failed });
    expect(mergeImageReports([{ nodeId: 'a', report: report([], { on_demand: false }) }])).toMatchObject({ on_demand: false, images: [], images_held: 0 });
  });
});
