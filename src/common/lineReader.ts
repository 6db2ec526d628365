/**
 * Cuts a byte stream into lines: the one place the broker keeps bytes until their newline. Bytes
 * stay bytes until their line ends, so a UTF-8 character split across chunks is decoded whole.
 *
 * A line ends at LF, and with `crEndsLine` at CR too (a progress bar's redraws), a CRLF then ending
 * one line, not two, across chunks as well. `maxLineBytes` bounds what is held, since most of these
 * streams are written from inside a sandbox. A longer line, as `overlong` says:
 * - 'split': goes out in pieces of at most maxLineBytes, never cutting a UTF-8 character (a command's
 *   endless line stays visible);
 * - 'skip': is dropped up to and including its end (a protocol's line is short: a longer one is not its);
 * - a function: is dropped as with 'skip', and the function called once for it (to give the stream up).
 */
const LF = 0x0a;
const CR = 0x0d;

export type Overlong = 'split' | 'skip' | (() => void);

export interface LineReaderOptions {
  /** Bytes of a line, its end not counted; unbounded when absent. */
  maxLineBytes?: number;
  /** What becomes of a longer line; 'split' when absent. */
  overlong?: Overlong;
  crEndsLine?: boolean;
}

/** `ended`: false for a piece of a split line and for a last line the stream left open (flush). */
export type LineSink = (line: string, ended: boolean) => void;

export class LineReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** The last byte seen was a CR that ended a line: an LF right after it ends none. */
  private lastWasCr = false;
  /** Within an overlong line being dropped. */
  private skipping = false;
  private readonly maxLineBytes: number;
  private readonly overlong: Overlong;
  private readonly crEndsLine: boolean;

  constructor(
    private readonly onLine: LineSink,
    options: LineReaderOptions = {},
  ) {
    this.maxLineBytes = options.maxLineBytes ?? Infinity;
    this.overlong = options.overlong ?? 'split';
    this.crEndsLine = options.crEndsLine ?? false;
  }

  push(chunk: Buffer): void {
    let from = 0;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (b !== LF && (b !== CR || !this.crEndsLine)) continue;
      if (i > from) {
        this.lastWasCr = false;
        this.keep(chunk.subarray(from, i));
      }
      from = i + 1;
      if (b === LF && this.lastWasCr) {
        this.lastWasCr = false; // the CR before it ended this line already
        continue;
      }
      this.lastWasCr = b === CR;
      this.endLine();
    }
    if (from < chunk.length) {
      this.lastWasCr = false;
      this.keep(chunk.subarray(from));
    }
  }

  /** The stream ended: a last line without its end goes out as it is. */
  flush(): void {
    if (this.skipping) this.skipping = false;
    else if (this.pendingBytes > 0) this.onLine(this.take(), false);
  }

  private keep(bytes: Buffer): void {
    if (this.skipping) return;
    this.pending.push(Buffer.from(bytes)); // a copy: the chunk may be a view of a larger buffer
    this.pendingBytes += bytes.length;
    if (this.pendingBytes <= this.maxLineBytes) return;
    if (this.overlong === 'split') {
      while (this.pendingBytes > this.maxLineBytes) this.cutPiece();
      return;
    }
    this.pending = [];
    this.pendingBytes = 0;
    this.skipping = true;
    if (typeof this.overlong === 'function') this.overlong();
  }

  private endLine(): void {
    if (this.skipping) this.skipping = false;
    else this.onLine(this.take(), true);
  }

  private take(): string {
    const text = Buffer.concat(this.pending, this.pendingBytes).toString('utf8');
    this.pending = [];
    this.pendingBytes = 0;
    return text;
  }

  /** Sends the first maxLineBytes of an overlong line, not splitting a UTF-8 character. */
  private cutPiece(): void {
    const all = Buffer.concat(this.pending, this.pendingBytes);
    let cut = this.maxLineBytes;
    while (cut > 0 && (all[cut] & 0xc0) === 0x80) cut--; // back to a character's first byte
    if (cut === 0) cut = this.maxLineBytes; // a bound under one character's size: cut it anyway
    const rest = all.subarray(cut);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
    this.onLine(all.toString('utf8', 0, cut), false);
  }
}
