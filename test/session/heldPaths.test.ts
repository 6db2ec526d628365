/**
 * The local file routes' use of a checked path (heldPaths.ts): a directory of it swapped for a
 * symlink after the check leads nowhere (403), and nothing is written, removed or changed outside the
 * root. The swap is made between the check and the use, as a racing session would.
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ForbiddenError } from '../../src/common/errors';
import { inHeldDir, onHeld, removeTree } from '../../src/backends/local/heldPaths';

describe('held paths: a symlink swapped in after the check', () => {
  let base: string;
  let root: string;
  let outside: string;
  beforeEach(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'held-'));
    root = path.join(base, 'root');
    outside = path.join(base, 'outside');
    fs.mkdirSync(path.join(root, 'd'), { recursive: true });
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(root, 'd', 'f'), 'inside');
    fs.writeFileSync(path.join(outside, 'f'), 'outside');
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  /** `d` checked as a directory of the root, then swapped for a link to `outside`. */
  function swap(): string {
    const real = path.join(fs.realpathSync(root), 'd', 'f');
    fs.rmSync(path.join(root, 'd'), { recursive: true });
    fs.symlinkSync(outside, path.join(root, 'd'));
    return real;
  }

  it('uses the path it checked when nothing changed: write, read, remove', async () => {
    const real = path.join(fs.realpathSync(root), 'd', 'new');
    await inHeldDir(root, real, true, (entry) => fs.promises.writeFile(entry, 'made'));
    expect(await onHeld(root, real, (object) => fs.promises.readFile(object, 'utf8'))).toBe('made');
    await inHeldDir(root, path.join(fs.realpathSync(root), 'd'), false, (entry) => removeTree(entry));
    expect(fs.existsSync(path.join(root, 'd'))).toBe(false);
  });

  it('refuses a write, a read, a chmod and a removal through the swapped link, and the outside stays as it was', async () => {
    const real = swap();
    await expect(inHeldDir(root, real, true, (entry) => fs.promises.writeFile(entry, 'escaped'))).rejects.toBeInstanceOf(ForbiddenError);
    await expect(onHeld(root, real, (object) => fs.promises.readFile(object, 'utf8'))).rejects.toBeInstanceOf(ForbiddenError);
    await expect(onHeld(root, real, (object) => fs.promises.chmod(object, 0o777))).rejects.toBeInstanceOf(ForbiddenError);
    await expect(inHeldDir(root, real, false, (entry) => fs.promises.unlink(entry))).rejects.toBeInstanceOf(ForbiddenError);
    expect(fs.readFileSync(path.join(outside, 'f'), 'utf8')).toBe('outside');
    expect(fs.statSync(path.join(outside, 'f')).mode & 0o777).not.toBe(0o777);
  });

  it('refuses a final component swapped for a link, and a removal of a tree does not follow a link inside it', async () => {
    const real = path.join(fs.realpathSync(root), 'd', 'f');
    fs.rmSync(real);
    fs.symlinkSync(path.join(outside, 'f'), real);
    await expect(onHeld(root, real, (object) => fs.promises.chmod(object, 0o777))).rejects.toBeInstanceOf(ForbiddenError);
    await inHeldDir(root, path.join(fs.realpathSync(root), 'd'), false, (entry) => removeTree(entry));
    expect(fs.readFileSync(path.join(outside, 'f'), 'utf8')).toBe('outside');
  });
});
