/**
 * What the in-process broker logs, kept in memory instead of printed: the lines its logger writes,
 * as written. The logger's own stream is wrapped, so every line goes through pino's serialisers and
 * redaction exactly as it would to stdout. `stop()` gives the stream back.
 */
import pino from 'pino';
import { logger } from '../../src/common/logger';

export interface LogCapture {
  readonly lines: string[];
  stop(): void;
}

type Writable = { write(chunk: string): boolean };

export function captureLog(): LogCapture {
  const stream = (logger as unknown as Record<symbol, Writable>)[pino.symbols.streamSym];
  const write = stream.write;
  const lines: string[] = [];
  stream.write = (chunk: string) => {
    lines.push(chunk);
    return true;
  };
  return {
    lines,
    stop: () => {
      stream.write = write;
    },
  };
}
