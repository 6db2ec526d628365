/**
 * The workspace's pure parts: the shell integration's mark parser, the event ring, the line splitter.
 * @backend any
 */
import { MarkParser, historyLine, type ShellMark } from '../../src/core/workspace/shellIntegration';
import { EventRing } from '../../src/core/workspace/eventRing';
import { LineSplitter, stripAnsi } from '../../src/core/workspace/terminalLines';

function parse(nonce: string, chunks: (string | Buffer)[], maxMarkBytes = 1024): { data: string; marks: ShellMark[] } {
  let data = '';
  const marks: ShellMark[] = [];
  const parser = new MarkParser(nonce, maxMarkBytes, (d) => (data += d.toString('latin1')), (m) => marks.push(m));
  for (const c of chunks) parser.push(Buffer.from(c as string, 'latin1'));
  return { data, marks };
}

describe('MarkParser', () => {
  it('cuts its marks out of the stream and reports them', () => {
    const r = parse('n1', ['a\x1b]633;C;n1;   12  echo hi; ls\r\n;n1\x07out\n\x1b]633;D;n1;3\x07\x1b]633;A;n1;3\x07$ ']);
    expect(r.data).toBe('aout\n$ ');
    expect(r.marks).toEqual([{ kind: 'start', commandLine: 'echo hi; ls' }, { kind: 'end', exitCode: 3 }, { kind: 'prompt', status: 3 }]);
  });

  it('takes a start mark whole, BEL and newlines in its command line included, however it is cut', () => {
    const whole = 'x\x1b]633;C;n1;    3* printf "\x07";\r\necho "a;b"\r\n;n1\x07y';
    for (let cut = 1; cut < whole.length; cut++) {
      expect(parse('n1', [whole.slice(0, cut), whole.slice(cut)])).toEqual({ data: 'xy', marks: [{ kind: 'start', commandLine: 'printf "\x07";\necho "a;b"' }] });
    }
  });

  it('finds a mark split across chunks at any byte', () => {
    const whole = 'x\x1b]633;D;n1;0\x07y';
    for (let cut = 1; cut < whole.length; cut++) {
      expect(parse('n1', [whole.slice(0, cut), whole.slice(cut)])).toEqual({ data: 'xy', marks: [{ kind: 'end', exitCode: 0 }] });
    }
  });

  it('passes through marks with another nonce (forged by output) and overlong ones', () => {
    expect(parse('n1', ['\x1b]633;D;evil;0\x07'])).toEqual({ data: '\x1b]633;D;evil;0\x07', marks: [] });
    const long = `\x1b]633;C;n1;${'x'.repeat(100)}`;
    expect(parse('n1', [long], 50).data).toBe(long);
  });

  it("reads `history 1`'s entry: no number, LF for the PTY's CR LF, no final newline", () => {
    expect(historyLine('  107  ls -l\r\n')).toBe('ls -l');
    expect(historyLine('    9* a\r\nb\r\n')).toBe('a\nb');
  });
});

describe('EventRing', () => {
  it('numbers events from 0 without gaps and keeps the latest `capacity`', () => {
    const ring = new EventRing(4);
    for (let i = 0; i < 6; i++) ring.emit({ type: 'output', line: String(i) });
    expect(ring.start).toBe(2);
    expect(ring.next).toBe(6);
    const { dropped, events } = ring.slice(0, 10);
    expect(dropped).toEqual({ type: 'dropped', from_seq: 0, to_seq: 1, ring_start: 2 });
    expect(events.map((e) => e.seq_id)).toEqual([2, 3, 4, 5]);
    expect(ring.slice(3, 2)).toEqual({ dropped: null, events: [expect.objectContaining({ seq_id: 3 }), expect.objectContaining({ seq_id: 4 })] });
  });

  it('replays from `since`, then delivers live events, with no gap and no duplicate', () => {
    const ring = new EventRing(8);
    for (let i = 0; i < 3; i++) ring.emit({ type: 'x' });
    const got: number[] = [];
    const off = ring.subscribe(1, (e) => got.push(e.seq_id), () => undefined);
    ring.emit({ type: 'x' });
    off();
    ring.emit({ type: 'x' });
    expect(got).toEqual([1, 2, 3]);
  });

  it('serializes a held event once, and a slot taken over by a later event anew', () => {
    const ring = new EventRing(2);
    const first = ring.emit({ type: 'output', line: 'a' });
    const text = ring.json(first);
    expect(JSON.parse(text)).toEqual({ seq_id: 0, type: 'output', line: 'a' });
    expect(ring.json(first)).toBe(text);
    ring.emit({ type: 'x' });
    const third = ring.emit({ type: 'output', line: 'c' }); // takes the first one's slot
    expect(JSON.parse(ring.json(third))).toEqual({ seq_id: 2, type: 'output', line: 'c' });
    expect(JSON.parse(ring.json(first))).toEqual({ seq_id: 0, type: 'output', line: 'a' }); // no longer held: serialized, not mixed up
  });
});

describe('LineSplitter', () => {
  it('splits lines, strips ANSI and carriage returns, replaces invalid UTF-8', () => {
    const lines: string[] = [];
    const s = new LineSplitter((l) => lines.push(l), 100, 10_000);
    s.push(Buffer.from('\x1b[31mred\x1b[0m\r\n10%\r50%\r100%\n'));
    s.push(Buffer.from([0x61, 0xff, 0x0a, 0xc3]));
    s.push(Buffer.from([0xa9, 0x0a])); // é split across chunks
    s.end();
    expect(lines).toEqual(['red', '100%', 'a\ufffd', 'é']);
  });

  it('flushes a partial line after the idle time, and cuts overlong lines', async () => {
    const lines: string[] = [];
    const s = new LineSplitter((l) => lines.push(l), 4, 10);
    s.push(Buffer.from('Password: '.slice(0, 3)));
    await new Promise((r) => setTimeout(r, 50));
    expect(lines).toEqual(['Pas']);
    s.push(Buffer.from('abcdefghij'));
    s.end();
    expect(lines).toEqual(['Pas', 'abcd', 'efgh', 'ij']);
  });

  it('strips OSC titles and bracketed paste switches', () => {
    expect(stripAnsi('\x1b]0;title\x07\x1b[?2004hx\x1b[?2004l')).toBe('x');
  });
});
