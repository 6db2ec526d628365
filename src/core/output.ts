/**
 * Collects one stream of one command with a byte cap: beyond it the head and the tail are kept and
 * the middle is counted, so memory stays bounded while a command floods output.
 */
export class BoundedOutput {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
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
    this.tail.push(Buffer.from(chunk));
    this.tailBytes += chunk.length;
    while (this.tailBytes > this.tailLimit) {
      const excess = this.tailBytes - this.tailLimit;
      const first = this.tail[0];
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.droppedBytes += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.droppedBytes += excess;
      }
    }
  }

  /** Keeps only the first `bytes` bytes seen (used to cut bash's own noise after an interrupt). */
  truncateTo(bytes: number): void {
    if (bytes >= this.byteLength) return;
    if (this.truncated && bytes > this.headLimit) {
      // The head stays; cut the tail where byte `bytes` of the stream falls (maybe before it starts).
      const keep = Math.max(0, bytes - (this.byteLength - this.tailBytes));
      this.tail = keep > 0 ? [Buffer.concat(this.tail).subarray(0, keep)] : [];
      this.tailBytes = keep;
      this.droppedBytes = bytes - this.headBytes - keep;
      return;
    }
    const all = Buffer.concat([...this.head, ...this.tail]).subarray(0, bytes);
    this.head.length = 0;
    this.tail = [];
    this.headBytes = 0;
    this.tailBytes = 0;
    this.droppedBytes = 0;
    this.push(all);
  }

  /** UTF-8 text; invalid sequences become U+FFFD, so the JSON response is always valid. */
  text(): string {
    if (this.droppedBytes === 0) {
      const parts = this.tail.length ? [...this.head, ...this.tail] : this.head;
      return parts.length === 1 ? parts[0].toString('utf8') : Buffer.concat(parts).toString('utf8');
    }
    return (
      Buffer.concat(this.head).toString('utf8') +
      `\n[... ${this.droppedBytes} bytes truncated ...]\n` +
      Buffer.concat(this.tail).toString('utf8')
    );
  }
}
