/**
 * Needs no backend:
 * @backend any
 */
import fc from 'fast-check';
import { BoundedOutput } from '../../src/core/session/output';

const marker = (dropped: number): string => `\n[... ${dropped} bytes truncated ...]\n`;

/** What text() must return for `stream` under `cap`: all of it, or head + marker + tail. */
function expectedText(stream: Buffer, cap: number): string {
  if (stream.length <= cap) return stream.toString('utf8');
  const head = Math.floor(cap / 2);
  const tail = cap - head;
  return stream.subarray(0, head).toString('utf8') + marker(stream.length - cap) + stream.subarray(stream.length - tail).toString('utf8');
}

function feed(cap: number, chunks: Buffer[]): BoundedOutput {
  const o = new BoundedOutput(cap);
  for (const c of chunks) o.push(c);
  return o;
}

/** Bytes the object holds right now, read from its private parts (the point of the memory test). */
function held(o: BoundedOutput): { counted: number; actual: number; backing: number } {
  const inner = o as unknown as { head: Buffer[]; ring: Buffer | null; headBytes: number; tailBytes: number };
  const backing = new Set(inner.head.map((b) => b.buffer));
  return {
    counted: inner.headBytes + inner.tailBytes,
    actual: inner.head.reduce((n, b) => n + b.length, 0) + inner.tailBytes,
    backing: [...backing].reduce((n, ab) => n + ab.byteLength, 0) + (inner.ring?.length ?? 0),
  };
}

function chunked(data: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; i += size) out.push(data.subarray(i, i + size));
  return out;
}

const sequence = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => 0x61 + (i % 26)));

describe('BoundedOutput', () => {
  it('keeps everything under the cap', () => {
    const o = feed(100, [Buffer.from('hello '), Buffer.from('world')]);
    expect(o.text()).toBe('hello world');
    expect(o.byteLength).toBe(11);
    expect(o.truncated).toBe(false);
  });

  it('is empty before any push, and ignores empty chunks', () => {
    const o = feed(10, [Buffer.alloc(0)]);
    expect(o.text()).toBe('');
    expect(o.byteLength).toBe(0);
    expect(o.truncated).toBe(false);
  });

  it('keeps exactly cap bytes without truncating', () => {
    const data = sequence(64);
    const o = feed(64, chunked(data, 7));
    expect(o.truncated).toBe(false);
    expect(o.text()).toBe(data.toString());
  });

  it.each([
    [64, 1],
    [64, 7],
    [64, 1000],
    [65, 3],
    [1, 1],
    [2, 5],
  ])('keeps head and tail with the marker (cap %i, chunks of %i)', (cap, size) => {
    const data = sequence(1000);
    const o = feed(cap, chunked(data, size));
    expect(o.truncated).toBe(true);
    expect(o.byteLength).toBe(1000);
    expect(o.text()).toBe(expectedText(data, cap));
    expect(held(o).counted).toBe(cap);
  });

  it('the marker counts exactly the dropped middle', () => {
    const o = feed(10, [Buffer.from('HEADHxxxxxxxxxxxxxxxxxxxxTAILT')]);
    expect(o.text()).toBe('HEADH' + marker(20) + 'TAILT');
    expect(o.byteLength).toBe(30);
  });

  it('gives the same text however the stream is chunked', () => {
    const data = sequence(5000);
    const want = expectedText(data, 999);
    for (const size of [1, 2, 3, 100, 499, 500, 501, 998, 999, 1000, 4999, 5000]) expect(feed(999, chunked(data, size)).text()).toBe(want);
  });

  it('copies what it keeps: later changes to a pushed buffer do not leak in', () => {
    const chunk = Buffer.from('abcdef');
    const o = new BoundedOutput(100);
    o.push(chunk);
    chunk.fill(0x7a);
    expect(o.text()).toBe('abcdef');
  });

  describe('truncateTo', () => {
    it('keeps the first n bytes when nothing was dropped', () => {
      const o = feed(100, [Buffer.from('command output'), Buffer.from('^C noise')]);
      o.truncateTo(14);
      expect(o.text()).toBe('command output');
      expect(o.byteLength).toBe(14);
      expect(o.truncated).toBe(false);
    });

    it('can cut across head and tail, to zero, and push again afterwards', () => {
      const data = sequence(80);
      const o = feed(100, chunked(data, 9));
      o.truncateTo(57);
      expect(o.text()).toBe(data.subarray(0, 57).toString());
      o.truncateTo(0);
      expect(o.text()).toBe('');
      expect(o.byteLength).toBe(0);
      o.push(Buffer.from('again'));
      expect(o.text()).toBe('again');
    });

    it('does nothing when n is at or past the end', () => {
      const o = feed(100, [Buffer.from('abc')]);
      o.truncateTo(3);
      o.truncateTo(50);
      expect(o.text()).toBe('abc');
    });

    it('after truncation, cuts the noise off the end of the tail', () => {
      const data = Buffer.concat([sequence(1000), Buffer.from('NOISE')]);
      const o = feed(100, chunked(data, 33));
      o.truncateTo(1000);
      expect(o.byteLength).toBe(1000);
      expect(o.truncated).toBe(true);
      expect(o.text()).toBe(expectedText(data, 100).slice(0, -'NOISE'.length));
      expect(o.text().endsWith('NOISE')).toBe(false);
      expect(o.text()).toContain(marker(905));
    });

    it('after truncation, a cut before the tail keeps the head and counts the rest as dropped', () => {
      const data = sequence(1000);
      const o = feed(100, chunked(data, 64));
      o.truncateTo(300); // the tail holds bytes 950..999: all after the cut
      expect(o.byteLength).toBe(300);
      expect(o.text()).toBe(data.subarray(0, 50).toString() + marker(250));
    });

    it('after truncation, a cut inside the head keeps exactly the first n bytes', () => {
      const data = sequence(1000);
      const o = feed(100, chunked(data, 64));
      o.truncateTo(20);
      expect(o.truncated).toBe(false);
      expect(o.text()).toBe(data.subarray(0, 20).toString());
    });
  });

  describe('UTF-8', () => {
    it('turns invalid sequences into U+FFFD', () => {
      const o = feed(100, [Buffer.from([0x41, 0xff, 0x42, 0xc3, 0x28, 0xe2, 0x82])]);
      expect(o.text()).toBe('A\ufffdB\ufffd(\ufffd');
    });

    it('keeps a multi-byte character that arrives split over pushes', () => {
      const text = 'é✓🎉';
      const bytes = Buffer.from(text);
      expect(feed(100, chunked(bytes, 1)).text()).toBe(text);
    });

    it('returns well-formed text even when the cut splits a character', () => {
      const data = Buffer.from('✓'.repeat(100)); // 3 bytes each; cap 10 splits characters
      const t = feed(10, chunked(data, 4)).text();
      expect(Buffer.from(t, 'utf8').toString('utf8')).toBe(t); // no lone surrogates: valid JSON text
      expect(t).toContain('\ufffd');
      expect(t.startsWith('✓')).toBe(true);
      expect(t.endsWith('✓')).toBe(true);
    });
  });

  it('stays bounded: 100 MB in 64 KiB chunks under a 1 MiB cap', () => {
    const cap = 1024 * 1024;
    const chunkSize = 64 * 1024;
    const chunks = (100 * 1024 * 1024) / chunkSize;
    const o = new BoundedOutput(cap);
    const chunk = Buffer.alloc(chunkSize);
    let maxBacking = 0;
    for (let i = 0; i < chunks; i++) {
      chunk.fill(i % 256);
      o.push(chunk);
      const h = held(o);
      if (h.counted > cap || h.actual !== h.counted) throw new Error(`after chunk ${i}: holds ${h.actual} bytes (counted ${h.counted}), cap ${cap}`);
      maxBacking = Math.max(maxBacking, h.backing);
    }
    // Views may pin at most one extra chunk of backing memory.
    expect(maxBacking).toBeLessThanOrEqual(cap + chunkSize);
    expect(o.byteLength).toBe(100 * 1024 * 1024);
    expect(o.truncated).toBe(true);
    const text = o.text();
    const m = marker(100 * 1024 * 1024 - cap);
    expect(Buffer.byteLength(text)).toBe(cap + Buffer.byteLength(m));
    // Head: the first 8 chunks; tail: the last 8 (bytes 0..7 and 1592..1599 mod 256).
    const headPart = Buffer.from(text.slice(0, cap / 2), 'latin1');
    const tailPart = Buffer.from(text.slice(cap / 2 + m.length), 'latin1');
    for (let k = 0; k < 8; k++) {
      expect(headPart[k * chunkSize]).toBe(k);
      expect(tailPart[k * chunkSize]).toBe((chunks - 8 + k) % 256);
    }
  });
});

describe('BoundedOutput against a model that keeps the whole stream (fast-check)', () => {
  /** What the output must say: the stream (cut at `cutAt`, if any) with the middle beyond `cap` dropped. */
  function model(stream: Buffer, cap: number, cutAt: number | null): string {
    const headLimit = Math.floor(cap / 2);
    const tailLimit = cap - headLimit;
    if (cutAt === null || cutAt >= stream.length) return expectedText(stream, cap);
    const truncated = stream.length > cap;
    if (!truncated || cutAt <= headLimit) return expectedText(stream.subarray(0, cutAt), cap);
    const tailStart = stream.length - tailLimit;
    const keep = Math.max(0, cutAt - tailStart);
    const dropped = cutAt - headLimit - keep;
    const head = stream.subarray(0, headLimit).toString('utf8');
    const tail = stream.subarray(tailStart, tailStart + keep).toString('utf8');
    return dropped > 0 ? head + marker(dropped) + tail : head + tail;
  }

  it('any stream, cap, chunking and cut gives the model text', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3000 }),
        fc.integer({ min: 1, max: 400 }),
        fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 20 }),
        fc.option(fc.nat({ max: 3200 }), { nil: null }),
        (length, cap, sizes, cutAt) => {
          const stream = sequence(length);
          const o = new BoundedOutput(cap);
          for (let at = 0, i = 0; at < length; i++) {
            const size = sizes[i % sizes.length];
            o.push(stream.subarray(at, at + size));
            at += size;
          }
          if (cutAt !== null) o.truncateTo(cutAt);
          expect(o.text()).toBe(model(stream, cap, cutAt));
        },
      ),
      { numRuns: 500 },
    );
  });
});
