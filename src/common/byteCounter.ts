import { Transform } from 'node:stream';

/** A pass-through that counts what goes through it (an upload's size, known only at its end). */
export function byteCounter(): { stream: Transform; bytes: () => number } {
  let bytes = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  return { stream, bytes: () => bytes };
}
