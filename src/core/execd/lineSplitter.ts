/**
 * Cuts a stream's bytes into lines, one event each (the SDK expects one output event per line).
 * Bytes are kept until their line ends, so a UTF-8 character is never split; a line longer than
 * `maxLineBytes` goes out in pieces rather than growing without bound.
 *
 * Two shapes, as OpenSandbox's execd sends them:
 * - 'bare' (commands, bash sessions): a line without its terminator; CR ends a line too (a progress
 *   bar's redraws become lines), CRLF counts once, and an empty line is sent as "\n";
 * - 'kept' (code contexts, as a Jupyter stream): a line with its "\n".
 */
const LF = 0x0a;
const CR = 0x0d;
const DEFAULT_MAX_LINE_BYTES = 64 * 1024;

export type LineShape = 'bare' | 'kept';

export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private lastWasCr = false;

  constructor(
    private readonly shape: LineShape,
    private readonly emit: (line: string) => void,
    private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let from = 0;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (b !== LF && (b !== CR || this.shape === 'kept')) continue;
      this.keep(chunk.subarray(from, i));
      from = i + 1;
      if (b === LF && this.lastWasCr && this.pendingBytes === 0) {
        this.lastWasCr = false; // the CR before it ended this line already
        continue;
      }
      this.lastWasCr = b === CR;
      this.endLine(true);
    }
    if (from < chunk.length) {
      this.lastWasCr = false;
      this.keep(chunk.subarray(from));
    }
  }

  /** The stream ended: a last line without its terminator goes out as it is. */
  flush(): void {
    if (this.pendingBytes > 0) this.endLine(false);
  }

  private keep(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.pending.push(Buffer.from(bytes)); // a copy: the chunk may be a view of a larger buffer
    this.pendingBytes += bytes.length;
    while (this.pendingBytes > this.maxLineBytes) this.cutOversized();
  }

  private endLine(terminated: boolean): void {
    const text = Buffer.concat(this.pending, this.pendingBytes).toString('utf8');
    this.pending = [];
    this.pendingBytes = 0;
    if (this.shape === 'kept') this.emit(terminated ? text + '\n' : text);
    else this.emit(text === '' ? '\n' : text);
  }

  /** Sends the first maxLineBytes of an endless line, not splitting a UTF-8 character. */
  private cutOversized(): void {
    const all = Buffer.concat(this.pending, this.pendingBytes);
    let cut = this.maxLineBytes;
    while (cut > 0 && (all[cut] & 0xc0) === 0x80) cut--; // back to a character's first byte
    this.emit(all.toString('utf8', 0, cut));
    const rest = all.subarray(cut);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
  }
}
