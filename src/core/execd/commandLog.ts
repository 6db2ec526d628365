/**
 * A background command's output for `/command/{id}/logs`: stdout and stderr merged in the order they
 * arrived, as lines with an absolute index. The cursor is a line count, like a file offset in lines:
 * a read from cursor c returns the lines from index c on, and the cursor to read from next (a cursor
 * past the end is brought back to it, so that lines written later are not skipped).
 *
 * Bounded by `maxBytes`: beyond it the oldest lines are dropped (their indexes stay taken, and a
 * cursor pointing at them reads from the oldest line kept). Lines come from a LineSplitter, which
 * holds a line back until it ends: a running command's partial line is never handed out in two.
 */
export class CommandLog {
  private readonly lines: string[] = [];
  /** Index of `lines[0]`: lines before it were dropped for room. */
  private firstIndex = 0;
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** One line of a stream, without its terminator (LineSplitter 'bare' shape: "\n" is an empty line). */
  addLine(text: string): void {
    this.append(text === '\n' ? '\n' : text + '\n');
  }

  /** Lines from `cursor` on (all when null) and the cursor of the next read. */
  read(cursor: number | null): { text: string; nextCursor: number } {
    const from = Math.max(cursor ?? 0, this.firstIndex);
    const end = this.firstIndex + this.lines.length;
    const text = from >= end ? '' : this.lines.slice(from - this.firstIndex).join('');
    return { text, nextCursor: end };
  }

  private append(line: string): void {
    this.lines.push(line);
    this.bytes += Buffer.byteLength(line);
    while (this.bytes > this.maxBytes && this.lines.length > 1) {
      this.bytes -= Buffer.byteLength(this.lines.shift()!);
      this.firstIndex++;
    }
  }
}
