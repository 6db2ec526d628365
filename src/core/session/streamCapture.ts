/**
 * Cuts one command's output out of one stream: drops everything before the start token, passes the
 * body on, stops at the end token. On stdout the end token is followed by `<status>\n` (a trailer:
 * execd's python interpreter puts its cell's outcome there, as one line of JSON).
 * Tokens may straddle chunk boundaries: a body's last bytes are held back only when they could begin
 * the end token (at most `token.length - 1`), so live consumers (execd's streams) see a line at once.
 */
export type CaptureSink = (chunk: Buffer) => void;

const NEWLINE = 0x0a;

export class StreamCapture {
  private phase: 'start' | 'body' | 'status' | 'done' = 'start';
  private carry: Buffer | null = null;
  private statusCode: number | null = null;
  private trailerText: string | null = null;

  constructor(
    private readonly startToken: Buffer,
    private readonly endToken: Buffer,
    private readonly withStatus: boolean,
    private readonly sink: CaptureSink,
  ) {}

  get done(): boolean {
    return this.phase === 'done';
  }

  /** Body bytes received but held back (they might begin the end token), not yet passed to the sink. */
  get heldBodyBytes(): number {
    return this.phase === 'body' && this.carry ? this.carry.length : 0;
  }

  /** The exit status printed after the end token (stdout capture only). */
  get status(): number | null {
    return this.statusCode;
  }

  /** The whole line after the end token (stdout capture only), as UTF-8. */
  get trailer(): string | null {
    return this.trailerText;
  }

  push(chunk: Buffer): void {
    let data = this.carry ? this.joinCarry(this.carry, chunk) : chunk;
    this.carry = null;
    while (data.length > 0 && this.phase !== 'done') {
      if (this.phase === 'start') {
        const at = data.indexOf(this.startToken);
        if (at < 0) {
          this.hold(data, this.startToken.length - 1);
          return;
        }
        data = data.subarray(at + this.startToken.length);
        this.phase = 'body';
      } else if (this.phase === 'body') {
        const at = data.indexOf(this.endToken);
        if (at < 0) {
          const keep = this.tokenPrefixAtEnd(data);
          if (data.length > keep) this.sink(data.subarray(0, data.length - keep));
          this.hold(data, keep);
          return;
        }
        if (at > 0) this.sink(data.subarray(0, at));
        data = data.subarray(at + this.endToken.length);
        this.phase = this.withStatus ? 'status' : 'done';
      } else {
        const nl = data.indexOf(NEWLINE);
        if (nl < 0) {
          this.carry = Buffer.from(data);
          return;
        }
        this.trailerText = data.toString('utf8', 0, nl);
        this.statusCode = Number.parseInt(this.trailerText, 10);
        this.phase = 'done';
      }
    }
  }

  /**
   * The held-back bytes and the new chunk as one. In the body (a flood: every chunk comes with a carry)
   * not by copying the whole chunk: only the junction is searched for the end token; if it is not
   * there, the carry is plain output and the chunk goes on alone.
   */
  private joinCarry(carry: Buffer, chunk: Buffer): Buffer {
    const reach = this.endToken.length - 1;
    if (this.phase !== 'body' || chunk.length < reach) return Buffer.concat([carry, chunk]);
    const junction = Buffer.concat([carry, chunk.subarray(0, reach)]);
    if (junction.indexOf(this.endToken) >= 0) return Buffer.concat([carry, chunk]);
    this.sink(carry);
    return chunk;
  }

  /** How many of `data`'s last bytes could be the start of the end token (the longest such run). */
  private tokenPrefixAtEnd(data: Buffer): number {
    const token = this.endToken;
    for (let i = Math.max(0, data.length - token.length + 1); i < data.length; i++) {
      if (data[i] === token[0] && data.compare(token, 0, data.length - i, i) === 0) return data.length - i;
    }
    return 0;
  }

  private hold(data: Buffer, keep: number): void {
    // Not subarray(length - keep): a negative start counts from the end and would drop bytes.
    this.carry = keep > 0 ? Buffer.from(data.subarray(Math.max(0, data.length - keep))) : null;
  }
}
