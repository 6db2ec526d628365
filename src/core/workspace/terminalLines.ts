/**
 * A job's terminal output cut into the `line`s of output events: split at newlines, escape
 * sequences and carriage returns taken out, invalid UTF-8 replaced (the raw stream keeps the bytes).
 * A partial line (a `Password:` prompt) is flushed after a short idle, so a viewer sees it.
 */
import { StringDecoder } from 'node:string_decoder';

/** CSI, OSC (to BEL or ST), other two-byte escapes, and the C0 controls a terminal does not print. */
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\x1b.|[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** What a terminal shows of a line: its text after the last carriage return (a progress bar's last state). */
function visibleLine(raw: string): string {
  const text = stripAnsi(raw.endsWith('\r') ? raw.slice(0, -1) : raw);
  const cr = text.lastIndexOf('\r');
  return cr < 0 ? text : text.slice(cr + 1);
}

export class LineSplitter {
  private decoder = new StringDecoder('utf8');
  private partial = '';
  private idleTimer: NodeJS.Timeout | null = null;

  /**
   * `maxLineChars`: a longer line is cut into several (`yes`-like floods without newlines stay bounded).
   * `idleFlushMs`: a partial line is emitted after this much silence.
   */
  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLineChars: number,
    private readonly idleFlushMs: number,
  ) {}

  push(chunk: Buffer): void {
    let text = this.partial + this.decoder.write(chunk);
    for (;;) {
      const nl = text.indexOf('\n');
      if (nl < 0) break;
      this.onLine(visibleLine(text.slice(0, nl)));
      text = text.slice(nl + 1);
    }
    while (text.length > this.maxLineChars) {
      this.onLine(visibleLine(text.slice(0, this.maxLineChars)));
      text = text.slice(this.maxLineChars);
    }
    this.partial = text;
    this.armIdleFlush();
  }

  /** Emits what is left (a last line without a newline) and stops. */
  end(): void {
    this.partial += this.decoder.end();
    this.flushPartial();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  private armIdleFlush(): void {
    if (this.partial === '') return;
    if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(() => this.flushPartial(), this.idleFlushMs);
  }

  private flushPartial(): void {
    this.idleTimer = null;
    const line = visibleLine(this.partial);
    this.partial = '';
    // A bare "\r" or an escape sequence alone is no line a person would see.
    if (line !== '') this.onLine(line);
  }
}
