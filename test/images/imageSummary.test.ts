/**
 * A node's images in its cluster record: the most used in full, the rest in a Bloom filter (cluster/node/imageSummary.ts).
 * @backend any
 */
import { imageOnNode, imageSummary } from '../../src/cluster/node/imageSummary';
import { bloomMayHave, bloomOf } from '../../src/common/bloomFilter';
import type { ImageView, ImagesReport } from '../../src/core/images/imageViews';

function view(image: string, uses: number, containers = 0): ImageView {
  return { image, state: 'held', pull: null, disk_bytes: 1, containers, warm_sessions: containers, acquires_waiting: 0, leased_sessions: 0, uses, last_used_at_ms: 1, warmup: null, error: null };
}

describe('a node record of images', () => {
  it('names the pools and the most used in full, and keeps every other held image findable', () => {
    const images = Array.from({ length: 500 }, (_, i) => view(`reg/t${i}:v1`, i, i === 3 ? 1 : 0));
    const report: ImagesReport = { on_demand: true, pulls_in_flight: 0, images_held: 500, disk_used_bytes: 1, disk_budget_bytes: 2, evictions: 0, room: { containers_free: 4, sessions_per_container: 2, max_containers_per_image: 4 }, images };
    const summary = imageSummary(report, 8);
    expect(summary.top.map((t) => t.image)).toEqual(['reg/t3:v1', 'reg/t499:v1', 'reg/t498:v1', 'reg/t497:v1', 'reg/t496:v1', 'reg/t495:v1', 'reg/t494:v1', 'reg/t493:v1']);
    expect(imageOnNode(summary, 'reg/t3:v1').entry?.warm).toBe(1);
    for (let i = 0; i < 490; i++) expect(imageOnNode(summary, `reg/t${i}:v1`).mayHold).toBe(true);
    expect(JSON.stringify(summary).length).toBeLessThan(4096);
  });

  it('a Bloom filter has no false negatives and few false positives', () => {
    const members = Array.from({ length: 1000 }, (_, i) => `m${i}`);
    const filter = bloomOf(members);
    expect(members.every((m) => bloomMayHave(filter, m))).toBe(true);
    const falsePositives = Array.from({ length: 1000 }, (_, i) => `x${i}`).filter((x) => bloomMayHave(filter, x)).length;
    expect(falsePositives).toBeLessThan(50);
  });
});
