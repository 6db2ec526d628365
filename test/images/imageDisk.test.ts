/**
 * The images' disk: each layer counted once, eviction of the least recently used unpinned images (core/images/imageDisk.ts).
 * @backend any
 */
import { ImageDisk } from '../../src/core/images/imageDisk';

const base = { key: 'base', bytes: 100 };
const image = (ref: string, own: number) => ({ ref, layers: [base, { key: `${ref}-layer`, bytes: own }] });

describe('image disk', () => {
  it('counts a layer shared by images once', () => {
    const disk = new ImageDisk(1000);
    disk.add(image('a', 10), 1);
    disk.add(image('b', 20), 2);
    expect(disk.usedBytes()).toBe(130);
    expect(disk.ownBytes('a')).toBe(10);
  });

  it('plans to remove the least recently used unpinned images until the bytes asked fit', () => {
    const disk = new ImageDisk(160);
    disk.add(image('a', 20), 1);
    disk.add(image('b', 20), 2);
    disk.add(image('c', 20), 3);
    disk.touch('a', 4); // a is now the most recent: b, then c, go first
    expect(disk.plan(0, new Set())).toEqual([]);
    expect(disk.plan(20, new Set())).toEqual(['b']);
    expect(disk.plan(40, new Set(['b']))).toEqual(['c', 'a']);
  });

  it('answers null when the pinned images leave too little room', () => {
    const disk = new ImageDisk(150);
    disk.add(image('a', 20), 1);
    disk.add(image('b', 20), 2);
    expect(disk.plan(40, new Set(['a', 'b']))).toBeNull();
    expect(disk.pinnedBytes(new Set(['a']))).toBe(120);
  });
});
