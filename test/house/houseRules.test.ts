/**
 * Rules of the house that hold across files, measured from the tree as it stands: what a reviewer
 * would otherwise have to count by hand each round.
 * @backend any
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

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
  const SIZED = ['src', 'taskd', 'devtools', 'scripts'];

  it(`no file of ${SIZED.join('/, ')}/ is over ${MAX_LINES} lines, whatever its language`, () => {
    const files = SIZED.flatMap(filesUnder);
    expect(files.filter((f) => f.endsWith('.c')).length).toBeGreaterThan(0);
    const over = files.map((file) => ({ file, lines: lineCount(file) })).filter((f) => f.lines > MAX_LINES);
    expect(over).toEqual([]);
  });
});

describe('test layout', () => {
  it('every TypeScript file of test/ is one folder down and named in camelCase, like src/', () => {
    const files = filesUnder('test').filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(100);
    const strays = files.filter((f) => !/^test\/[a-z][a-zA-Z0-9]*\/[a-z][a-zA-Z0-9]*(\.test)?\.ts$/.test(f));
    expect(strays).toEqual([]);
  });
});

/** A relative import's file, as Node and TypeScript resolve it; null for a package or a path outside the tree. */
function resolveImport(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = path.posix.join(path.posix.dirname(from), specifier);
  if (base.startsWith('..')) return null;
  for (const candidate of [base, `${base}.ts`, `${base}.js`, `${base}/index.ts`]) {
    const abs = path.join(ROOT, candidate);
    if (fs.existsSync(abs) && fs.statSync(abs).isFile()) return candidate;
  }
  return null;
}

const CODE = /\.(ts|js|mjs|cjs)$/;

/** Every import of the code under `dirs` (static, dynamic, require and export-from; types too), file to file. */
function importsUnder(dirs: string[]): Array<{ from: string; to: string }> {
  const out: Array<{ from: string; to: string }> = [];
  for (const from of dirs.flatMap(filesUnder).filter((f) => CODE.test(f))) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(ROOT, from), 'utf8'), true, true);
    for (const { fileName } of importedFiles) {
      const to = resolveImport(from, fileName);
      if (to !== null) out.push({ from, to });
    }
  }
  return out;
}

/** Each pair of rooms that import each other, with a file of each way to look at first. */
function twoWay(imports: Array<{ from: string; to: string }>, roomOf: (file: string) => string | null): string[] {
  const example = new Map<string, string>();
  for (const { from, to } of imports) {
    const [a, b] = [roomOf(from), roomOf(to)];
    if (a === null || b === null || a === b) continue;
    if (!example.has(`${a} -> ${b}`)) example.set(`${a} -> ${b}`, `${from} -> ${to}`);
  }
  const pairs: string[] = [];
  for (const [edge, one] of example) {
    const [a, b] = edge.split(' -> ');
    const back = example.get(`${b} -> ${a}`);
    if (back && a < b) pairs.push(`${a} <-> ${b} (${one}; ${back})`);
  }
  return pairs;
}

describe('folder imports', () => {
  const TOP = ['src', 'taskd', 'devtools', 'scripts', 'bench', 'test'];
  const imports = importsUnder(TOP);
  const top = (file: string): string => file.split('/')[0];

  it('no two folders of the house import each other', () => {
    expect(imports.length).toBeGreaterThan(2000);
    expect(twoWay(imports, top)).toEqual([]);
  });

  it("no two rooms of src/ (its folders and its files) import each other", () => {
    const room = (file: string): string | null => (file.startsWith('src/') ? file.split('/').slice(0, 2).join('/') : null);
    expect(twoWay(imports, room)).toEqual([]);
  });

  it('scripts/, bench/ and devtools/ are built on the product and devtools/ alone, never on test code', () => {
    const allowed: Record<string, string[]> = { scripts: ['src', 'devtools'], bench: ['src', 'devtools'], devtools: ['src'] };
    const strays = imports.filter(({ from, to }) => top(from) in allowed && top(to) !== top(from) && !allowed[top(from)].includes(top(to)));
    expect(strays.map(({ from, to }) => `${from} -> ${to}`)).toEqual([]);
  });
});
