/**
 * Needs no backend:
 * @backend any
 */
import { spawnSync } from 'node:child_process';
import { StreamCapture } from '../../src/core/session/streamCapture';
import { SHELL_INIT_SCRIPT, commandLine, markerTokens } from '../../src/core/session/framing';

const NONCE = '0123456789abcdef';
const OTHER = 'fedcba9876543210';
const tokens = markerTokens(NONCE);

interface Captured {
  body: Buffer;
  done: boolean;
  status: number | null;
}

/** Feeds `chunks` to a fresh capture and returns what it passed on. */
function capture(chunks: Buffer[], withStatus = true, nonce = NONCE): Captured {
  const t = markerTokens(nonce);
  const parts: Buffer[] = [];
  const c = new StreamCapture(t.start, t.end, withStatus, (chunk) => parts.push(Buffer.from(chunk)));
  for (const chunk of chunks) c.push(chunk);
  return { body: Buffer.concat(parts), done: c.done, status: c.status };
}

/** Every way to cut `data` into two pieces, and into three pieces. */
function* allSplits(data: Buffer): Generator<Buffer[]> {
  for (let i = 0; i <= data.length; i++) yield [data.subarray(0, i), data.subarray(i)];
  for (let i = 0; i <= data.length; i++) {
    for (let j = i; j <= data.length; j++) yield [data.subarray(0, i), data.subarray(i, j), data.subarray(j)];
  }
}

/** A small deterministic PRNG (mulberry32), so a failing split can be reproduced. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomSplit(data: Buffer, next: () => number, maxPiece: number): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const n = Math.floor(next() * (maxPiece + 1)); // may be 0: empty chunks must be harmless
    out.push(data.subarray(at, at + n));
    at += n;
  }
  return out;
}

const bytewise = (data: Buffer): Buffer[] => [...data].map((b) => Buffer.from([b]));

const stdoutFrame = (prefix: string, body: string | Buffer, status: number, suffix = ''): Buffer =>
  Buffer.concat([Buffer.from(prefix), tokens.start, Buffer.from(body), tokens.end, Buffer.from(`${status}\n${suffix}`)]);

const stderrFrame = (prefix: string, body: string | Buffer, suffix = ''): Buffer =>
  Buffer.concat([Buffer.from(prefix), tokens.start, Buffer.from(body), tokens.end, Buffer.from(`\n${suffix}`)]);

describe('StreamCapture', () => {
  const body = 'hello\nwörld ✓\n' + NONCE.slice(0, 7) + ' ' + OTHER + 'e0\n';
  const framed = stdoutFrame('prompt$ leftover of the last command\n', body, 42, 'next prompt');

  it('cuts the body out of one whole chunk and parses the status', () => {
    const r = capture([framed]);
    expect(r).toEqual({ body: Buffer.from(body), done: true, status: 42 });
  });

  it('passes a body on at once unless its last bytes could begin the end token (live streams see each line)', () => {
    const seen: string[] = [];
    const c = new StreamCapture(tokens.start, tokens.end, true, (chunk) => seen.push(chunk.toString()));
    c.push(Buffer.concat([tokens.start, Buffer.from('one\n')]));
    expect(seen).toEqual(['one\n']);
    c.push(Buffer.concat([Buffer.from('two'), tokens.end.subarray(0, 5)]));
    expect(seen).toEqual(['one\n', 'two']); // the token's first bytes wait for the rest
    c.push(Buffer.concat([tokens.end.subarray(5), Buffer.from('0 trailer {"a": 1}\n')]));
    expect(seen.join('')).toBe('one\ntwo');
    expect(c.status).toBe(0);
    expect(c.trailer).toBe('0 trailer {"a": 1}');
  });

  it('gives the same result for every split into two and three chunks', () => {
    const expected = Buffer.from(body);
    let splits = 0;
    for (const chunks of allSplits(framed)) {
      const r = capture(chunks);
      if (!r.body.equals(expected) || !r.done || r.status !== 42) {
        throw new Error(`split ${chunks.map((c) => c.length).join('+')} gave ${JSON.stringify(r.body.toString())}, done=${r.done}, status=${r.status}`);
      }
      splits++;
    }
    expect(splits).toBeGreaterThan(framed.length * framed.length / 2);
  });

  it('gives the same result fed byte by byte', () => {
    expect(capture(bytewise(framed))).toEqual({ body: Buffer.from(body), done: true, status: 42 });
    const err = stderrFrame('noise', body, 'late noise');
    expect(capture(bytewise(err), false)).toEqual({ body: Buffer.from(body), done: true, status: null });
  });

  it('gives the same result for many random splits (seeded)', () => {
    const next = rng(20240601);
    const big = stdoutFrame('x'.repeat(100), Buffer.from(body.repeat(50)), 7, 'y'.repeat(100));
    for (let round = 0; round < 500; round++) {
      const chunks = randomSplit(big, next, 1 + Math.floor(next() * 40));
      const r = capture(chunks);
      expect(r.status).toBe(7);
      expect(r.done).toBe(true);
      expect(r.body.toString()).toBe(body.repeat(50));
    }
  });

  it('drops every byte before the start token, including partial tokens', () => {
    const prefix = `${NONCE.slice(0, 10)}${NONCE}e1\n${OTHER}s${NONCE}`; // a partial token, an end token, another nonce
    const r = capture([stdoutFrame(prefix, 'body', 0)]);
    expect(r.body.toString()).toBe('body');
    expect(r.status).toBe(0);
  });

  it('ignores an end token that comes before the start token', () => {
    const data = Buffer.concat([tokens.end, Buffer.from('3\n'), tokens.start, Buffer.from('ok'), tokens.end, Buffer.from('5\n')]);
    for (const chunks of allSplits(data)) expect(capture(chunks)).toEqual({ body: Buffer.from('ok'), done: true, status: 5 });
  });

  it('is not confused by partial tokens, other nonces or its own start token in the body', () => {
    const tricky = [
      NONCE, // the nonce without its suffix
      NONCE.slice(0, 15),
      NONCE + 'x',
      NONCE + 's', // the start token again: body, not a restart
      OTHER + 'e', // another command's end token
      OTHER + 's',
      NONCE.slice(1) + 'e', // a suffix of the end token
      '0123456789abcdeE', // case matters
    ].join('|');
    for (const chunks of allSplits(stdoutFrame('', tricky, 1))) {
      const r = capture(chunks);
      expect(r.body.toString()).toBe(tricky);
      expect(r.status).toBe(1);
    }
  });

  it('passes on a body that ends with a prefix of the end token', () => {
    const bodyText = 'abc' + NONCE.slice(0, 16); // ends right before the end token's last byte
    const data = stdoutFrame('', bodyText, 0);
    for (const chunks of allSplits(data)) expect(capture(chunks).body.toString()).toBe(bodyText);
  });

  it('handles an empty body and stops at the first end token', () => {
    expect(capture([stdoutFrame('', '', 0)])).toEqual({ body: Buffer.alloc(0), done: true, status: 0 });
    const twice = Buffer.concat([stdoutFrame('', 'one', 1), stdoutFrame('', 'two', 2)]);
    expect(capture(bytewise(twice))).toEqual({ body: Buffer.from('one'), done: true, status: 1 });
  });

  it('parses multi-digit statuses and waits for the newline', () => {
    const parts: Buffer[] = [];
    const c = new StreamCapture(tokens.start, tokens.end, true, (chunk) => parts.push(chunk));
    c.push(Buffer.concat([tokens.start, Buffer.from('out'), tokens.end, Buffer.from('25')]));
    expect(c.done).toBe(false);
    expect(c.status).toBeNull();
    c.push(Buffer.from('5'));
    expect(c.done).toBe(false);
    c.push(Buffer.from('\nrest'));
    expect(c.done).toBe(true);
    expect(c.status).toBe(255);
    expect(Buffer.concat(parts).toString()).toBe('out');
  });

  it('without status, is done right after the end token', () => {
    const c = new StreamCapture(tokens.start, tokens.end, false, () => undefined);
    c.push(Buffer.concat([tokens.start, tokens.end]));
    expect(c.done).toBe(true);
    expect(c.status).toBeNull();
  });

  it('is not done while the end token is incomplete, and passes the body on early', () => {
    const parts: Buffer[] = [];
    const c = new StreamCapture(tokens.start, tokens.end, true, (chunk) => parts.push(Buffer.from(chunk)));
    c.push(Buffer.concat([tokens.start, Buffer.from('x'.repeat(1000))]));
    // At most token.length - 1 bytes are held back.
    expect(Buffer.concat(parts).length).toBeGreaterThanOrEqual(1000 - (tokens.end.length - 1));
    c.push(tokens.end.subarray(0, tokens.end.length - 1));
    expect(c.done).toBe(false);
    c.push(Buffer.alloc(0)); // an empty chunk changes nothing
    expect(c.done).toBe(false);
    c.push(Buffer.concat([tokens.end.subarray(tokens.end.length - 1), Buffer.from('0\n')]));
    expect(c.done).toBe(true);
    expect(Buffer.concat(parts).toString()).toBe('x'.repeat(1000));
  });

  it('keeps binary and invalid UTF-8 bytes as they are', () => {
    const bin = Buffer.from([0x00, 0xff, 0xfe, 0x0a, 0xc3, 0x28, 0x1b, 0x5b]);
    for (const chunks of allSplits(stdoutFrame('', bin, 0))) expect(capture(chunks).body.equals(bin)).toBe(true);
  });

  it('cuts a real bash stream framed by commandLine (stdout with status, stderr without)', () => {
    const nonce = 'a1b2c3d4e5f60718';
    const cmd = `echo out; echo err >&2; printf '%s' ${nonce}; (exit 3)`;
    const script = SHELL_INIT_SCRIPT + 'echo garbage before; echo garbage before >&2\n' + commandLine(cmd, nonce) + 'echo garbage after\n';
    const r = spawnSync('bash', ['--norc', '--noprofile'], { input: script, timeout: 20_000 });
    expect(r.error).toBeUndefined();
    const t = markerTokens(nonce);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const so = new StreamCapture(t.start, t.end, true, (c) => out.push(Buffer.from(c)));
    const se = new StreamCapture(t.start, t.end, false, (c) => err.push(Buffer.from(c)));
    for (const chunk of bytewise(r.stdout)) so.push(chunk);
    for (const chunk of bytewise(r.stderr)) se.push(chunk);
    expect(Buffer.concat(out).toString()).toBe(`out\n${nonce}`);
    expect(Buffer.concat(err).toString()).toBe('err\n');
    expect(so.status).toBe(3);
    expect(se.done).toBe(true);
  });
});
