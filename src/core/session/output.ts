/**
 * Collects one stream of one command with a byte cap: beyond it the head and the tail are kept and
 * the middle is counted, so memory stays bounded while a command floods output.
 */
export class BoundedOutput {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  /**
   * The tail is a ring of `tailLimit` bytes, allocated when the head is full: a flood then costs one
   * copy per chunk into memory that already exists, not one retained (then dropped) buffer per chunk,
   * whose garbage outran the GC (a 50 MB flood at the 16 MiB cap peaked at +275 MB of RSS).
   */
  private ring: Buffer | null = null;
  /** Where the next tail byte goes; when the ring is full it is also where the oldest byte is. */
  private ringPos = 0;
  private tailBytes = 0;
  private droppedBytes = 0;
  private readonly headLimit: number;
  private readonly tailLimit: number;

  constructor(maxBytes: number) {
    this.headLimit = Math.floor(maxBytes / 2);
    this.tailLimit = maxBytes - this.headLimit;
  }

  get byteLength(): number {
    return this.headBytes + this.tailBytes + this.droppedBytes;
  }

  /** Bytes of the stream left out of the answer (the middle of a flood). */
  get dropped(): number {
    return this.droppedBytes;
  }

  get truncated(): boolean {
    return this.droppedBytes > 0;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(chunk.length, this.headLimit - this.headBytes);
      // Copy: the chunk may be a view into a larger buffer we must not pin.
      this.head.push(Buffer.from(chunk.subarray(0, take)));
      this.headBytes += take;
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    if (this.tailLimit === 0) {
      this.droppedBytes += chunk.length;
      return;
    }
    const ring = (this.ring ??= Buffer.allocUnsafe(this.tailLimit));
    if (chunk.length >= this.tailLimit) {
      this.droppedBytes += this.tailBytes + chunk.length - this.tailLimit;
      chunk.copy(ring, 0, chunk.length - this.tailLimit);
      this.ringPos = 0;
      this.tailBytes = this.tailLimit;
      return;
    }
    const first = Math.min(chunk.length, this.tailLimit - this.ringPos);
    chunk.copy(ring, this.ringPos, 0, first);
    if (first < chunk.length) chunk.copy(ring, 0, first);
    this.ringPos = (this.ringPos + chunk.length) % this.tailLimit;
    const overflow = Math.max(0, this.tailBytes + chunk.length - this.tailLimit);
    this.droppedBytes += overflow;
    this.tailBytes += chunk.length - overflow;
  }

  /** The tail's bytes in stream order (a view when they do not wrap around the ring). */
  private tail(): Buffer {
    if (!this.ring || this.tailBytes === 0) return Buffer.alloc(0);
    if (this.tailBytes < this.tailLimit) return this.ring.subarray(0, this.tailBytes);
    return Buffer.concat([this.ring.subarray(this.ringPos), this.ring.subarray(0, this.ringPos)]);
  }

  /** Keeps only the first `bytes` bytes seen (used to cut bash's own noise after an interrupt). */
  truncateTo(bytes: number): void {
    if (bytes >= this.byteLength) return;
    if (this.truncated && bytes > this.headLimit) {
      // The head stays; cut the tail where byte `bytes` of the stream falls (maybe before it starts).
      const keep = Math.max(0, bytes - (this.byteLength - this.tailBytes));
      const kept = Buffer.from(this.tail().subarray(0, keep));
      this.droppedBytes = bytes - this.headBytes - keep;
      if (keep > 0) kept.copy(this.ring!, 0);
      this.ringPos = keep % this.tailLimit;
      this.tailBytes = keep;
      return;
    }
    const all = Buffer.concat([...this.head, this.tail()]).subarray(0, bytes);
    this.head.length = 0;
    this.headBytes = 0;
    this.tailBytes = 0;
    this.ringPos = 0;
    this.droppedBytes = 0;
    this.push(all);
  }

  /** UTF-8 text; invalid sequences become U+FFFD, so the JSON response is always valid. */
  text(): string {
    if (this.byteLength === 0) return ''; // most commands leave one stream empty: no buffer to build
    const head = this.head.length === 1 ? this.head[0] : Buffer.concat(this.head);
    if (this.droppedBytes === 0) return this.tailBytes ? Buffer.concat([head, this.tail()]).toString('utf8') : head.toString('utf8');
    return head.toString('utf8') + `\n[... ${this.droppedBytes} bytes truncated ...]\n` + this.tail().toString('utf8');
  }
}
