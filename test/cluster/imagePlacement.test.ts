/**
 * Placement by image over node records (cluster/gateway/imagePlacement.ts): warm first, then a node
 * holding the image (in full or by its Bloom filter alone), then the image's rendezvous node among
 * those with room; ties, no room, unhealthy and excluded nodes, groups, configured pools' images.
 * @backend any
 */
import { placeByImage, rendezvousOrder, type ImagePlacementInput } from '../../src/cluster/gateway/imagePlacement';
import type { NodeRecord } from '../../src/cluster/clusterStore';
import { node } from '../helpers/imageNodes';

const IMAGE = 'reg.local:5000/tasks/t1:v1';

function place(nodes: NodeRecord[], more: Partial<ImagePlacementInput> = {}) {
  const p = placeByImage({ nodes, image: IMAGE, sessions: 1, spread: false, exclude: new Set(), inFlight: () => 0, ...more });
  return p && { node: p.node.node_id, tier: p.tier, free: p.free };
}

/** The node ids in the image's rendezvous order. */
function order(ids: string[], image = IMAGE): string[] {
  return rendezvousOrder(image, ids.map((id) => ({ node: node(id) }))).map((f) => f.node.node_id);
}

describe('placement by image', () => {
  it('goes where the image is warm, the most free sessions first, whatever holds it elsewhere', () => {
    const nodes = [node('a', { top: [{ image: IMAGE, warm: 1, containers: 1 }] }), node('b', { top: [{ image: IMAGE, warm: 3, containers: 2 }] }), node('c', { others: [IMAGE] })];
    expect(place(nodes)).toEqual({ node: 'b', tier: 'warm', free: true });
  });

  it('breaks a tie of warm sessions by the image rendezvous order, the same on every call', () => {
    const ids = ['a', 'b', 'c', 'd'];
    const nodes = ids.map((id) => node(id, { top: [{ image: IMAGE, warm: 2, containers: 1 }] }));
    const first = order(ids)[0];
    for (let i = 0; i < 5; i++) expect(place([...nodes].reverse())?.node).toBe(first);
  });

  it('counts the gateway unseen acquires against warm sessions: a node they use up is warm no more', () => {
    const nodes = [node('a', { top: [{ image: IMAGE, warm: 1, containers: 1 }] }), node('b')];
    expect(place(nodes, { inFlight: (id) => (id === 'a' ? 1 : 0) })).toEqual({ node: 'a', tier: 'held', free: false });
  });

  it('goes to a node that holds the image when none is warm, one known by its Bloom filter alone included', () => {
    const ids = ['a', 'b', 'c'];
    const holder = order(ids)[2]; // the last in rendezvous order: chosen for holding it, not by chance
    const nodes = ids.map((id) => node(id, id === holder ? { others: ['reg.local:5000/tasks/other:v1', IMAGE] } : {}));
    expect(place(nodes)).toEqual({ node: holder, tier: 'held', free: false });
  });

  it('places a cold image on its rendezvous node among those with room, and the next when that one is full, dead or tried', () => {
    const ids = ['a', 'b', 'c'];
    const [first, second, third] = order(ids);
    expect(place(ids.map((id) => node(id)))).toEqual({ node: first, tier: 'cold', free: false });
    expect(place(ids.map((id) => node(id, id === first ? { room: 0 } : {})))?.node).toBe(second);
    expect(place(ids.map((id) => node(id, id === first ? { health: 'unhealthy' } : {})))?.node).toBe(second);
    expect(place(ids.map((id) => node(id)), { exclude: new Set([first, second]) })?.node).toBe(third);
  });

  it('spreads different images over the nodes, each on a node of its own order', () => {
    const ids = ['a', 'b', 'c'];
    const byNode = new Map<string, number>();
    for (let i = 0; i < 300; i++) {
      const image = `reg.local:5000/tasks/t${i}:v1`;
      const p = placeByImage({ nodes: ids.map((id) => node(id)), image, sessions: 1, spread: false, exclude: new Set(), inFlight: () => 0 });
      byNode.set(p!.node.node_id, (byNode.get(p!.node.node_id) ?? 0) + 1);
    }
    for (const id of ids) expect(byNode.get(id)).toBeGreaterThan(60);
  });

  it('passes over a holder without room for one with room, and waits in a pool of the image when no node has any', () => {
    const ids = ['a', 'b'];
    const [first, second] = order(ids);
    // The holder is full and its pool at its ceiling: the other node, cold, has room.
    const holderFull = [node(first, { top: [{ image: IMAGE, containers: 4, leased: 8 }], room: 0 }), node(second)];
    expect(place(holderFull)).toEqual({ node: second, tier: 'cold', free: false });
    // Nobody has room: the pool of the image (its queue), though it is not the image's first node.
    const allFull = [node(first, { room: 0 }), node(second, { top: [{ image: IMAGE, containers: 4, leased: 8 }], room: 0 })];
    expect(place(allFull)).toEqual({ node: second, tier: 'held', free: false });
    expect(place([node(first, { room: 0 }), node(second, { room: 0 })])).toEqual({ node: first, tier: 'cold', free: false });
  });

  it('places an acquire_group whole on a node that can hold all of it', () => {
    const nodes = [node('a', { top: [{ image: IMAGE, warm: 2, containers: 1 }], room: 0 }), node('b', { top: [{ image: IMAGE, warm: 1, containers: 1 }], room: 3 })];
    // 4 sessions: a has 2 warm and no room; b has 1 warm and room for 3 more containers of 2.
    expect(place(nodes, { sessions: 4 })).toEqual({ node: 'b', tier: 'held', free: false });
    expect(place(nodes, { sessions: 2 })).toEqual({ node: 'a', tier: 'warm', free: true });
    // Spread: one container per session; b has 1 and may start 3 more (its ceiling is 4).
    expect(place(nodes, { sessions: 4, spread: true })?.node).toBe('b');
  });

  it('never places on a node that pulls no images, unless a configured pool of it runs the image', () => {
    const plain = node('a', { onDemand: false });
    expect(place([plain])).toBeNull();
    const runs = node('b', { onDemand: false, pools: { default: { total: 2, available: 1, in_use: 1, cleaning: 0, broken: 0, image: IMAGE } } });
    expect(place([plain, runs])).toEqual({ node: 'b', tier: 'warm', free: true });
    const runsFull = node('b', { onDemand: false, pools: { default: { total: 2, available: 0, in_use: 2, cleaning: 0, broken: 0, image: IMAGE } } });
    expect(place([plain, runsFull])).toEqual({ node: 'b', tier: 'held', free: false });
  });

  it('has no node for an acquire when every node is unhealthy or tried', () => {
    expect(place([node('a', { health: 'unhealthy' })])).toBeNull();
    expect(place([node('a')], { exclude: new Set(['a']) })).toBeNull();
    expect(place([])).toBeNull();
  });
});
