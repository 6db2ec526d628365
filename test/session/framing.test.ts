/**
 * Needs no backend:
 * @backend any
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SHELL_INIT_SCRIPT, ansiCQuote, changeDirectoryCommand, commandLine, markerTokens } from '../../src/core/session/framing';

/** What a real bash makes of `$QUOTED`: `bash --norc -c "printf %s $QUOTED"`, no shell in between. */
function bashPrintf(quoted: string): Buffer {
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', `printf %s ${quoted}`], { timeout: 20_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`bash exited ${r.status}: ${r.stderr.toString()}`);
  return r.stdout;
}

/** Same, but through `eval` as commandLine runs it: the quoted text is a command that prints itself. */
function bashEval(quoted: string): Buffer {
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', `eval ${quoted}`], { timeout: 20_000 });
  if (r.error) throw r.error;
  return r.stdout;
}

const everyControlChar = Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join('') + '\x7f';

const TRICKY: Array<[string, string]> = [
  ['empty string', ''],
  ['plain text', 'hello world'],
  ['single quote', "it's"],
  ['only quotes', `'"'"''`],
  ['double quotes', 'say "hi"'],
  ['backslash', 'a\\b'],
  ['trailing backslash', 'end\\'],
  ['many backslashes', '\\\\\\\\'],
  ['backslash before quote', "\\'"],
  ['newline', 'line1\nline2\n'],
  ['carriage return', 'a\r\nb'],
  ['tab', 'a\tb'],
  ['every control char', everyControlChar],
  ['escape sequence', '\x1b[31mred\x1b[0m'],
  ['CTLESC and CTLNUL (bash-internal quoting bytes)', '\x01\x7f\x01\x01\x7f'],
  ['unicode', 'héllo wörld ✓ 日本語 🎉 \u00a0 \u2028'],
  ['literal $\'...\'', "$'abc\\n'"],
  ['literal \\x41', '\\x41'],
  ['literal \\x4 then hex chars', '\\x4fff'],
  ['literal \\u and \\c', '\\u00e9 \\U0001F600 \\cA \\0101 \\e \\E'],
  ['control char followed by hex chars', '\x01A\x02ff\x1bbeef\x7f7f'],
  ['tab then digits', '\t0123'],
  ['dollar and backticks', '$HOME `id` $(id) ${x:-y} $1 $@'],
  ['glob and history chars', '* ? [a-z] ! !! ^a^b # ~'],
  ['semicolons and pipes', 'a; b | c && d || e & f > g < h'],
  ['percent (printf format chars)', '%s %d %% %b \\n'],
];

describe('ansiCQuote', () => {
  it.each(TRICKY)('round-trips %s through a real bash', (_name, text) => {
    expect(bashPrintf(ansiCQuote(text)).toString('utf8')).toBe(text);
  });

  it('round-trips every single byte-sized character (except NUL)', () => {
    let all = '';
    for (let c = 1; c < 256; c++) all += String.fromCharCode(c) + '|';
    expect(bashPrintf(ansiCQuote(all)).toString('utf8')).toBe(all);
  });

  it('produces one line: no raw newline, quote or control byte inside', () => {
    const q = ansiCQuote("a'b\nc\x00d\x7f\\");
    expect(q.startsWith("$'")).toBe(true);
    expect(q.endsWith("'")).toBe(true);
    const inner = q.slice(2, -1);
    expect([...inner].filter((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f)).toEqual([]);
    expect(inner.replace(/\\./g, '')).not.toContain("'");
    expect(q).toBe("$'a\\'b\\nc\\x00d\\x7f\\\\'");
  });

  it('runs through eval exactly as written, even with unbalanced quotes', () => {
    expect(bashEval(ansiCQuote(`printf '%s\\n' "a b" 'c'\\''d' $'e\\tf'`)).toString()).toBe("a b\nc'd\ne\tf\n");
    const unbalanced = spawnSync('bash', ['--norc', '-c', `eval ${ansiCQuote("echo 'oops")}; echo after $?`], { timeout: 20_000 });
    expect(unbalanced.stdout.toString()).toBe('after 2\n');
  });
});

describe('commandLine', () => {
  it('is a single line that starts the markers and evaluates the quoted command', () => {
    const line = commandLine("echo 'x'\necho y", '00ff00ff00ff00ff');
    expect(line).toBe("__bs 00ff00ff00ff00ff;eval $'echo \\'x\\'\\necho y' </dev/null;__be 00ff00ff00ff00ff\n");
    expect(line.indexOf('\n')).toBe(line.length - 1);
  });

  it('frames a real bash: markers, status and state that persists between commands', () => {
    const n1 = '1111111111111111';
    const n2 = '2222222222222222';
    const input = SHELL_INIT_SCRIPT + commandLine('cd /tmp && X=kept; read -r v; echo "read:$v"; false', n1) + commandLine('echo "$PWD $X"', n2);
    // LC_ALL=C: a missing locale would make bash warn on stderr, which this test compares exactly.
    const r = spawnSync('bash', ['--norc', '--noprofile'], { input, timeout: 20_000, env: { ...process.env, LC_ALL: 'C' } });
    const out = r.stdout.toString('latin1');
    const t1 = markerTokens(n1);
    const t2 = markerTokens(n2);
    expect(out).toBe(`${t1.start}read:\n${t1.end}1\n${t2.start}/tmp kept\n${t2.end}0\n`);
    expect(r.stderr.toString('latin1')).toBe(`${t1.start}${t1.end}\n${t2.start}${t2.end}\n`);
  });

  it('changeDirectoryCommand enters a directory whatever its name holds', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cd it's -x $HOME \\ "));
    try {
      const r = spawnSync('bash', ['--norc', '--noprofile', '-c', `${changeDirectoryCommand(dir)} && builtin printf %s "$PWD"`], { timeout: 20_000 });
      expect(r.stdout.toString()).toBe(dir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('markerTokens are the nonce with s and e', () => {
    const t = markerTokens('abcdef0123456789');
    expect(t.start.toString('latin1')).toBe('abcdef0123456789s');
    expect(t.end.toString('latin1')).toBe('abcdef0123456789e');
  });
});
