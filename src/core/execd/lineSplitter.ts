/**
 * Cuts a stream's bytes into lines, one event each (the SDK expects one output event per line), with
 * the common line reader (common/lineReader.ts): a UTF-8 character is never split, and a line longer
 * than `maxLineBytes` goes out in pieces rather than growing without bound.
 *
 * Two shapes, as OpenSandbox's execd sends them:
 * - 'bare' (commands, bash sessions): a line without its terminator; CR ends a line too (a progress
 *   bar's redraws become lines), CRLF counts once, and an empty line is sent as "\n";
 * - 'kept' (code contexts, as a Jupyter stream): a line with its "\n".
 */
import { LineReader } from '../../common/lineReader';

const DEFAULT_MAX_LINE_BYTES = 64 * 1024;

export type LineShape = 'bare' | 'kept';

export class LineSplitter {
  private readonly reader: LineReader;

  constructor(shape: LineShape, emit: (line: string) => void, maxLineBytes = DEFAULT_MAX_LINE_BYTES) {
    // A piece of an endless line, or a last line the stream left open, goes out as it is.
    const onLine =
      shape === 'kept'
        ? (text: string, ended: boolean) => emit(ended ? text + '\n' : text)
        : (text: string, ended: boolean) => emit(ended && text === '' ? '\n' : text);
    this.reader = new LineReader(onLine, { maxLineBytes, overlong: 'split', crEndsLine: shape === 'bare' });
  }

  push(chunk: Buffer): void {
    this.reader.push(chunk);
  }

  /** The stream ended: a last line without its terminator goes out as it is. */
  flush(): void {
    this.reader.flush();
  }
}
