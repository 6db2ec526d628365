/**
 * laneFiles.ts: the command that writes an acquire's files with bash builtins, run here by a real
 * bash reading it from a pipe, as a container's fs lane does. Every byte value must come out as it
 * went in, and paths with quotes or spaces must land where they say.
 * @backend any
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LANE_FILES_MAX_BYTES, printfFormat, redactFileContents, writeFilesCommand } from '../../src/backends/docker/files/laneFiles';

/** Runs `command` in a bash that reads it from its stdin (a pipe), like the lane's interactive bash. */
function runInBash(command: string): { status: number | null; stderr: string } {
  const r = spawnSync('bash', ['--norc', '--noprofile', '--noediting', '-i'], { input: `${command}\nexit $?\n`, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stderr: r.stderr };
}

describe('laneFiles: files written by printf on the fs lane', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'lane-files-'));
  });
  afterEach(() => {
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('writes every byte value, quotes, percent signs, backslashes and digits after escapes exactly', () => {
    const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const tricky = Buffer.from("a'b\"c%d%%e\\f\\\\0g\u0000123\n\t-x %s $HOME `id` $(id) !! é ✓", 'utf8');
    const files = [
      { path: 'every.bin', content: every },
      { path: 'tricky.txt', content: tricky },
      { path: 'starts-with-dash.txt', content: Buffer.from('-n -e --\n') },
      { path: 'empty.txt', content: Buffer.alloc(0) },
    ];
    const dir = path.join(root, 'work');
    const command = writeFilesCommand(dir, files);
    expect(command).not.toBeNull();
    const r = runInBash(command as string);
    expect(r.stderr).not.toMatch(/error|not found|No such/i);
    expect(r.status).toBe(0);
    for (const f of files) expect(fs.readFileSync(path.join(dir, f.path)).equals(f.content)).toBe(true);
    expect(fs.statSync(path.join(dir, 'every.bin')).mode & 0o777).toBe(0o644);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o755);
  });

  it('makes missing parents, keeps an existing directory, and takes paths with spaces and quotes', () => {
    const dir = path.join(root, 'prepared');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'kept.txt'), 'kept');
    const files = [
      { path: 'a/b/c/deep.txt', content: Buffer.from('deep\n') },
      { path: "it's here/x y.txt", content: Buffer.from('spaced\n') },
      { path: './dot/x.txt', content: Buffer.from('dot') },
    ];
    const r = runInBash(writeFilesCommand(dir, files) as string);
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'a/b/c/deep.txt'), 'utf8')).toBe('deep\n');
    expect(fs.readFileSync(path.join(dir, "it's here/x y.txt"), 'utf8')).toBe('spaced\n');
    expect(fs.readFileSync(path.join(dir, 'dot/x.txt'), 'utf8')).toBe('dot');
    expect(fs.readFileSync(path.join(dir, 'kept.txt'), 'utf8')).toBe('kept');
  });

  it('fails (non-zero) when a file cannot be written, and writes nothing after it', () => {
    const dir = path.join(root, 'w');
    fs.mkdirSync(path.join(dir, 'taken'), { recursive: true });
    const r = runInBash(writeFilesCommand(dir, [{ path: 'taken', content: Buffer.from('x') }, { path: 'after.txt', content: Buffer.from('y') }]) as string);
    expect(r.status).not.toBe(0);
    expect(fs.existsSync(path.join(dir, 'after.txt'))).toBe(false);
  });

  it('leaves payloads too big for a command line to the upload (null)', () => {
    expect(writeFilesCommand('/tmp/s/ab', [{ path: 'big', content: Buffer.alloc(LANE_FILES_MAX_BYTES + 1, 'a') }])).toBeNull();
    // Binary spelled out takes 4 bytes each: a quarter of the bound already does not fit.
    expect(writeFilesCommand('/tmp/s/ab', [{ path: 'bin', content: Buffer.alloc(LANE_FILES_MAX_BYTES / 2, 0) }])).toBeNull();
    expect(writeFilesCommand('/tmp/s/ab', [{ path: 'ok', content: Buffer.alloc(1000, 'a') }])).not.toBeNull();
  });

  it('spells bytes so that no escape takes the next digit, and redacts contents for logs', () => {
    expect(printfFormat(Buffer.from([0, 0x31, 0x27, 0x25, 0x5c]))).toBe('\\0001\\047%%\\\\');
    const command = writeFilesCommand('/tmp/s/ab', [{ path: 'secret.txt', content: Buffer.from('token=hunter2') }]) as string;
    expect(command).toContain('hunter2');
    expect(redactFileContents(command)).not.toContain('hunter2');
    expect(redactFileContents(command)).toContain("'/tmp/s/ab/secret.txt'");
  });
});
