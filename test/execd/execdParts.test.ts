/**
 * execd's pure parts: output cut into line events, and a background command's log with its cursor.
 * @backend any
 */
import { LineSplitter } from '../../src/core/execd/lineSplitter';
import { CommandLog } from '../../src/core/execd/commandLog';
import { commandScript } from '../../src/core/execd/commands';

function split(shape: 'bare' | 'kept', chunks: string[], maxLineBytes?: number): string[] {
  const lines: string[] = [];
  const s = new LineSplitter(shape, (l) => lines.push(l), maxLineBytes);
  for (const c of chunks) s.push(Buffer.from(c));
  s.flush();
  return lines;
}

describe('LineSplitter', () => {
  it("cuts 'bare' lines as execd sends them: no terminator, CR ends a line, CRLF once, an empty line is \\n", () => {
    expect(split('bare', ['a\nb\r\nc\rd\n\nlast'])).toEqual(['a', 'b', 'c', 'd', '\n', 'last']);
    expect(split('bare', ['a\r', '\nb', '\r', '\r', '\n'])).toEqual(['a', 'b', '\n']);
  });

  it("keeps the newline in 'kept' lines (a Jupyter stream) and CR inside them", () => {
    expect(split('kept', ['x = 1\r\n', 'par', 'tial'])).toEqual(['x = 1\r\n', 'partial']);
  });

  it('never splits a UTF-8 character, across chunks or when an endless line is cut', () => {
    const euro = Buffer.from('€'); // 3 bytes
    const lines: string[] = [];
    const s = new LineSplitter('bare', (l) => lines.push(l), 4);
    s.push(Buffer.concat([Buffer.from('a'), euro.subarray(0, 1)]));
    s.push(Buffer.concat([euro.subarray(1), Buffer.from('€b\n')]));
    expect(lines.join('')).toBe('a€€b');
    expect(lines.every((l) => !l.includes('\ufffd'))).toBe(true);
  });
});

describe('CommandLog', () => {
  it('reads from a line cursor and answers the next cursor; past the end is brought back', () => {
    const log = new CommandLog(1024);
    log.addLine('one');
    log.addLine('\n');
    expect(log.read(null)).toEqual({ text: 'one\n\n', nextCursor: 2 });
    log.addLine('three');
    expect(log.read(2)).toEqual({ text: 'three\n', nextCursor: 3 });
    expect(log.read(7)).toEqual({ text: '', nextCursor: 3 });
  });

  it('drops the oldest lines beyond its byte bound, keeping indexes absolute', () => {
    const log = new CommandLog(8);
    for (const l of ['aaa', 'bbb', 'ccc']) log.addLine(l);
    expect(log.read(0)).toEqual({ text: 'bbb\nccc\n', nextCursor: 3 });
    expect(log.read(2)).toEqual({ text: 'ccc\n', nextCursor: 3 });
  });
});

describe('commandScript', () => {
  it('runs the command in a subshell that enters cwd and exports envs, every byte quoted', () => {
    expect(commandScript({ command: "echo 'hi'\n", cwd: "/tmp/it's", envs: { A: 'x y' }, timeoutMs: null, background: false })).toBe(
      "(builtin cd -- $'/tmp/it\\'s' || builtin exit $?;builtin export A=$'x y';eval $'echo \\'hi\\'\\n')",
    );
  });
});
