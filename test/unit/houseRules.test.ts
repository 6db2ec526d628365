/**
 * Rules of the house that hold across files, measured from the tree as it stands: what a reviewer
 * would otherwise have to count by hand each round.
 */
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** Every file under `dir` (relative to the root), in path order. Dot files aside: builds such as the session init's. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(rel));
    else if (entry.isFile()) out.push(rel);
  }
  return out.sort();
}

/** As `wc -l` counts them (and eslint's max-lines, which holds the TypeScript of these folders too). */
function lineCount(file: string): number {
  const bytes = fs.readFileSync(path.join(ROOT, file));
  let lines = 0;
  for (const b of bytes) if (b === 0x0a) lines++;
  return lines;
}

describe('file sizes', () => {
  const MAX_LINES = 350;
  const SIZED = ['src', 'taskd', 'scripts'];

  it(`no file of ${SIZED.join('/, ')}/ is over ${MAX_LINES} lines, whatever its language`, () => {
    const files = SIZED.flatMap(filesUnder);
    expect(files.filter((f) => f.endsWith('.c')).length).toBeGreaterThan(0);
    const over = files.map((file) => ({ file, lines: lineCount(file) })).filter((f) => f.lines > MAX_LINES);
    expect(over).toEqual([]);
  });
});
