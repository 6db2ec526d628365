/**
 * The disk the node's images take, and which of them go when room is needed. An image's size is its
 * layers', each layer counted once however many held images share it (task images that add a layer
 * to one base cost the base once). Eviction takes the least recently used images that nothing pins
 * (a container runs it, an acquire waits for it, a configured pool runs it), one by one, until the
 * bytes asked for fit: only the layers no remaining image shares come free.
 */
import type { HeldImage, ImageLayer } from '../ports/imageStore';

interface Entry {
  layers: ImageLayer[];
  lastUsedMs: number;
  uses: number;
}

export interface DiskEntry {
  ref: string;
  /** Its layers' bytes, shared ones included (what `docker images` says). */
  bytes: number;
  lastUsedMs: number;
  uses: number;
}

export class ImageDisk {
  private readonly held = new Map<string, Entry>();

  constructor(readonly budgetBytes: number) {}

  has(ref: string): boolean {
    return this.held.has(ref);
  }

  get size(): number {
    return this.held.size;
  }

  /** An image the engine holds now (pulled, or found there); `atMs` its last use. */
  add(image: HeldImage, atMs: number): void {
    const prior = this.held.get(image.ref);
    this.held.set(image.ref, { layers: image.layers, lastUsedMs: atMs, uses: prior?.uses ?? 0 });
  }

  /** An acquire or a warm-up used it: it is the most recently used. */
  touch(ref: string, atMs: number): void {
    const entry = this.held.get(ref);
    if (!entry) return;
    entry.lastUsedMs = atMs;
    entry.uses++;
  }

  remove(ref: string): void {
    this.held.delete(ref);
  }

  /** Bytes of every distinct layer of the held images (`without`: as if these were gone). */
  usedBytes(without: ReadonlySet<string> = new Set()): number {
    const layers = new Map<string, number>();
    for (const [ref, entry] of this.held) if (!without.has(ref)) for (const layer of entry.layers) layers.set(layer.key, layer.bytes);
    let total = 0;
    for (const b of layers.values()) total += b;
    return total;
  }

  /** Bytes of the layers `ref` has that no other held image has: what removing it frees. */
  ownBytes(ref: string): number {
    return this.usedBytes() - this.usedBytes(new Set([ref]));
  }

  /**
   * The images to remove, least recently used first, so that `extraBytes` more fit under the budget;
   * `pinned` never go. Null when even removing every unpinned image leaves too little room.
   */
  plan(extraBytes: number, pinned: ReadonlySet<string>): string[] | null {
    const gone = new Set<string>();
    const candidates = [...this.held.entries()].filter(([ref]) => !pinned.has(ref)).sort((a, b) => a[1].lastUsedMs - b[1].lastUsedMs);
    if (this.usedBytes() + extraBytes <= this.budgetBytes) return [];
    for (const [ref] of candidates) {
      gone.add(ref);
      if (this.usedBytes(gone) + extraBytes <= this.budgetBytes) return [...gone];
    }
    return null;
  }

  /** Bytes the pinned images hold (what no eviction can free). */
  pinnedBytes(pinned: ReadonlySet<string>): number {
    const others = new Set([...this.held.keys()].filter((ref) => !pinned.has(ref)));
    return this.usedBytes(others);
  }

  entries(): DiskEntry[] {
    return [...this.held.entries()].map(([ref, e]) => ({ ref, bytes: e.layers.reduce((n, l) => n + l.bytes, 0), lastUsedMs: e.lastUsedMs, uses: e.uses }));
  }
}
