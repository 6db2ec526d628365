/**
 * The session init's build (src/backends/docker/isolation/sessionInitBuild.ts) with the machine's C
 * compiler: built once per source, reused by the next start, refused with the compiler's reason,
 * and a build of another source removed only once it is old.
 * @backend any
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildSessionInit } from '../../src/backends/docker/isolation/sessionInitBuild';

jest.setTimeout(180_000);


describe('session init build', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'session-init-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('builds a static executable once, and the next start reuses it', async () => {
    const first = await buildSessionInit(root);
    if (first.path === null) throw new Error(first.why);
    expect(first.built).toBe(true);
    const header = fs.readFileSync(first.path).subarray(0, 4);
    expect(header.toString('latin1')).toBe('\x7fELF');
    expect(fs.statSync(first.path).mode & 0o111).toBe(0o111);
    // Its usage line: it runs, and a request it does not know is refused with status 2.
    expect(spawnSync(first.path, ['nonsense'], { encoding: 'utf8' })).toMatchObject({ status: 2, stderr: expect.stringMatching(/^usage: session-init/) });
    expect(await buildSessionInit(root)).toEqual({ path: first.path, built: false });
    expect(fs.readdirSync(root)).toEqual([path.basename(first.path)]);
  });

  it("takes a build shipped beside its source under its hash's name (the broker image's) without a compiler", async () => {
    const built = await buildSessionInit(root);
    if (built.path === null) throw new Error(built.why);
    const name = path.basename(built.path);
    const tree = fs.mkdtempSync(path.join(os.tmpdir(), 'session-init-tree-'));
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'session-init-'));
    try {
      const source = path.join(tree, 'sessionInit.c');
      const sources = path.resolve(__dirname, '../../src/backends/docker/isolation');
      for (const c of fs.readdirSync(sources).filter((n) => n.endsWith('.c'))) fs.copyFileSync(path.join(sources, c), path.join(tree, c));
      // The image's build (containers/broker/Dockerfile runs this script) names it as the broker would.
      const shipped = spawnSync('sh', [path.resolve(__dirname, '../../scripts/build-session-init.sh'), source], { encoding: 'utf8' });
      expect([shipped.status, shipped.stdout.trim()]).toEqual([0, path.join(tree, name)]);
      const taken = await buildSessionInit(other, '/bin/false', [source]);
      expect(taken).toEqual({ path: path.join(other, name), built: true });
      expect(fs.readFileSync(path.join(other, name)).equals(fs.readFileSync(path.join(tree, name)))).toBe(true);
      // Another source beside the same build (here a file it includes): compiled (here: refused), never given the stale one.
      fs.appendFileSync(path.join(tree, 'sessionReuse.c'), '\n');
      expect(await buildSessionInit(fs.mkdtempSync(path.join(other, 'x-')), '/bin/false', [source])).toMatchObject({ path: null });
    } finally {
      fs.rmSync(tree, { recursive: true, force: true });
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  it('without a working compiler says why, and leaves nothing behind', async () => {
    const refused = await buildSessionInit(root, '/bin/false');
    expect(refused).toMatchObject({ path: null, why: expect.stringMatching(/^\/bin\/false could not build it/) });
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it("removes another source's build once it is a day old, not before", async () => {
    const fresh = path.join(root, '.session-init-0000000000000000');
    const old = path.join(root, '.session-init-1111111111111111');
    fs.writeFileSync(fresh, '');
    fs.writeFileSync(old, '');
    const dayAgo = new Date(Date.now() - 25 * 3600_000);
    fs.utimesSync(old, dayAgo, dayAgo);
    const built = await buildSessionInit(root);
    if (built.path === null) throw new Error(built.why);
    expect(fs.readdirSync(root).sort()).toEqual([path.basename(fresh), path.basename(built.path)].sort());
  });
});
