/**
 * What the image suites of a cluster wait on: the warm sessions of an image on a node, as every
 * live gateway reads them in the nodes' records (its /health), which is what it places by.
 */
import { eventually } from './broker';
import type { TestCluster } from './cluster';

/** A node of a gateway's /health, with its images. */
interface NodeImagesView {
  node_id: string;
  images?: { top: Array<{ image: string; warm: number; containers: number; held: boolean }> };
}

/** Until every live gateway sees `image` with `warm` free sessions at least on `nodeId`. */
export async function untilWarmOn(cluster: TestCluster, nodeId: string, image: string, warm = 1): Promise<void> {
  for (const g of cluster.gateways.filter((x) => x.alive)) {
    let last: unknown;
    await eventually(
      async () => {
        const nodes = (await cluster.health(g)).nodes as unknown as NodeImagesView[];
        const top = nodes.find((n) => n.node_id === nodeId)?.images?.top ?? [];
        last = top;
        return (top.find((t) => t.image === image)?.warm ?? 0) >= warm;
      },
      60_000,
      () => `${g.url} to see ${warm} warm session(s) of ${image} on ${nodeId} (last: ${JSON.stringify(last)})`,
    );
  }
}
