/**
 * The terminal's raw output (marks cut out) for viewers: the latest bytes, so a viewer that attaches
 * late sees the screen's recent past, and the live bytes after them. Viewers get every chunk at once;
 * a slow one is dropped by its socket, never waited for.
 */

/** Enough for a few screens of a wide terminal; a late viewer sees at most this much of the past. */
const SCROLLBACK_BYTES = 64 * 1024;

export type RawViewer = (chunk: Buffer) => void;

export class TerminalScrollback {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private readonly viewers = new Set<RawViewer>();

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.bytes - this.chunks[0].length >= SCROLLBACK_BYTES) this.bytes -= this.chunks.shift()!.length;
    for (const v of this.viewers) v(chunk);
  }

  /** The recent past (up to SCROLLBACK_BYTES), for a viewer that attaches now. */
  recent(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /**
   * The last `maxBytes` or less, from a line's start (a cut inside an escape sequence would show as
   * text): the screen a viewer that fell behind is redrawn with.
   */
  tail(maxBytes: number): Buffer {
    const all = this.recent();
    if (all.length <= maxBytes) return all;
    const from = all.indexOf(0x0a, all.length - maxBytes);
    return from < 0 ? all.subarray(all.length - maxBytes) : all.subarray(from + 1);
  }

  /** Every chunk from now on; returns the detach. */
  attach(viewer: RawViewer): () => void {
    this.viewers.add(viewer);
    return () => this.viewers.delete(viewer);
  }
}
