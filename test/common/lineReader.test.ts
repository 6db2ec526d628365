/**
 * The line reader every byte stream of the broker is cut with (src/common/lineReader.ts): lines across
 * chunks, UTF-8 characters across chunks, CR and CRLF, and what each bound does to an overlong line.
 * @backend any
 */
import { LineReader, type LineReaderOptions } from '../../src/common/lineReader';

type Seen = Array<[string, boolean]>;

/** Pushes each chunk (a string as UTF-8, or bytes), then flushes when asked; returns every line with its `ended`. */
function read(chunks: Array<string | number[]>, options: LineReaderOptions = {}, flush = false): Seen {
  const seen: Seen = [];
  const reader = new LineReader((line, ended) => seen.push([line, ended]), options);
  for (const chunk of chunks) reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk));
  if (flush) reader.flush();
  return seen;
}

describe('LineReader', () => {
  it('joins a line across chunks, and holds an open line until its end or a flush', () => {
    expect(read(['ab', 'c\nd', 'e\n', '\nf'])).toEqual([
      ['abc', true],
      ['de', true],
      ['', true],
    ]);
    expect(read(['ab', 'c\nlast'], {}, true)).toEqual([
      ['abc', true],
      ['last', false],
    ]);
    expect(read(['done\n'], {}, true)).toEqual([['done', true]]);
  });

  it('decodes a UTF-8 character split across chunks whole', () => {
    const euro = [...Buffer.from('€')]; // e2 82 ac
    expect(read([[0x61, euro[0]], [euro[1]], [euro[2], 0x0a]])).toEqual([['a€', true]]);
  });

  it('ends a line at LF only, unless CR ends lines too: then CRLF ends one, across chunks as well', () => {
    expect(read(['a\r\nb\rc\n'])).toEqual([
      ['a\r', true],
      ['b\rc', true],
    ]);
    expect(read(['a\r', '\nb\r', '\r', '\nc\rd\n'], { crEndsLine: true })).toEqual([
      ['a', true],
      ['b', true],
      ['', true],
      ['c', true],
      ['d', true],
    ]);
  });

  it("'split': an overlong line goes out in pieces of the bound, never cutting a character", () => {
    // € is 3 bytes: 4 bytes would cut the second one, so the first piece is the first € alone.
    expect(read(['€€x', '\n'], { maxLineBytes: 4, overlong: 'split' })).toEqual([
      ['€', false],
      ['€x', true],
    ]);
    expect(read(['abcdefghij\n'], { maxLineBytes: 4 })).toEqual([
      ['abcd', false],
      ['efgh', false],
      ['ij', true],
    ]);
  });

  it("'skip': an overlong line is dropped to its end, its tail never taken for a line", () => {
    const long = 'x'.repeat(40);
    expect(read(['ready\n', long.slice(0, 20), long.slice(20) + 'exit 1 0\n', 'spawned a 7\n'], { maxLineBytes: 16, overlong: 'skip' })).toEqual([
      ['ready', true],
      ['spawned a 7', true],
    ]);
    // A line of exactly the bound is a line; one byte more is not, whole in one chunk or not.
    expect(read(['12345678\n123456789\nok\n'], { maxLineBytes: 8, overlong: 'skip' })).toEqual([
      ['12345678', true],
      ['ok', true],
    ]);
    expect(read(['123456789'], { maxLineBytes: 8, overlong: 'skip' }, true)).toEqual([]);
  });

  it('a function: told once per overlong line, which is dropped as with skip', () => {
    let told = 0;
    const seen = read(['ready\n', 'y'.repeat(10), 'y'.repeat(10), '\nok\n', 'z'.repeat(9) + '\n'], { maxLineBytes: 8, overlong: () => told++ });
    expect(seen).toEqual([
      ['ready', true],
      ['ok', true],
    ]);
    expect(told).toBe(2);
  });

  it('keeps its own copy of what it holds: a chunk reused by its stream changes nothing', () => {
    const seen: string[] = [];
    const reader = new LineReader((line) => seen.push(line));
    const pool = Buffer.from('abc|def\n');
    reader.push(pool.subarray(0, 3));
    pool.fill(0x2d, 0, 3); // the stream's buffer, written over
    reader.push(pool.subarray(4));
    expect(seen).toEqual(['abcdef']);
  });
});
