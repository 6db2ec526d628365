/**
 * Needs no backend:
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultFifoRoot, ensureOwnRoot, FIFO_ROOT_IN_MEMORY, FIFO_ROOT_ON_RUN, inMemoryFs, type HostProbe } from '../../src/backends/docker/shells/fifoRoot';

describe('inMemoryFs', () => {
  it('knows a tmpfs from procfs, and answers for a directory not made yet by its parent', () => {
    // /dev/shm is a tmpfs on Linux (glibc's shm_open needs one); /proc is procfs everywhere.
    expect(inMemoryFs('/dev/shm')).toBe(true);
    expect(inMemoryFs('/dev/shm/not/made/yet')).toBe(true);
    expect(inMemoryFs('/proc')).toBe(false);
  });
});

describe('defaultFifoRoot', () => {
  const host = (over: Partial<{ runInMemory: boolean | null; shmInMemory: boolean | null; mounted: boolean }>): HostProbe => {
    const h = { runInMemory: false, shmInMemory: true, mounted: false, ...over };
    return {
      inMemoryFs: (dir) => (dir === '/run' ? h.runInMemory : dir === '/dev/shm' ? h.shmInMemory : null),
      isMountPoint: (dir) => dir === FIFO_ROOT_ON_RUN && h.mounted,
    };
  };

  it('moves to /dev/shm only on a host whose /run is on a disk', () => {
    expect(defaultFifoRoot(host({})).root).toBe(FIFO_ROOT_IN_MEMORY);
    expect(defaultFifoRoot(host({ runInMemory: true })).root).toBe(FIFO_ROOT_ON_RUN);
    expect(defaultFifoRoot(host({ runInMemory: null })).root).toBe(FIFO_ROOT_ON_RUN);
    expect(defaultFifoRoot(host({ shmInMemory: false })).root).toBe(FIFO_ROOT_ON_RUN);
  });

  it('keeps /run/bash-broker where it is a mount of its own (a broker in a container given the host\'s)', () => {
    expect(defaultFifoRoot(host({ mounted: true }))).toEqual({ root: FIFO_ROOT_ON_RUN, reason: `${FIFO_ROOT_ON_RUN} is a mount of its own` });
  });
});

describe('ensureOwnRoot', () => {
  let shared: string;
  beforeEach(() => {
    shared = fs.mkdtempSync(path.join(os.tmpdir(), 'fifo-root-'));
    fs.chmodSync(shared, 0o1777); // like /dev/shm: anyone may make entries
  });
  afterEach(() => fs.rmSync(shared, { recursive: true, force: true }));

  it('makes a private directory in a shared parent, and accepts its own again', () => {
    const root = path.join(shared, 'bash-broker');
    ensureOwnRoot(root);
    expect(fs.statSync(root).mode & 0o777).toBe(0o700);
    expect(() => ensureOwnRoot(root)).not.toThrow();
  });

  it('refuses what someone else could have put there first', () => {
    const open = path.join(shared, 'open');
    fs.mkdirSync(open, { mode: 0o777 });
    fs.chmodSync(open, 0o777);
    expect(() => ensureOwnRoot(open)).toThrow(/writable by others/);
    const link = path.join(shared, 'link');
    fs.symlinkSync(os.tmpdir(), link);
    expect(() => ensureOwnRoot(link)).toThrow(/not a directory/);
  });

  // Giving a directory to another uid takes root (CI runs as root); jest lists the skip otherwise.
  (process.getuid?.() === 0 ? it : it.skip)("refuses another user's directory", () => {
    const theirs = path.join(shared, 'theirs');
    fs.mkdirSync(theirs, { mode: 0o700 });
    fs.chownSync(theirs, 65534, 65534);
    expect(() => ensureOwnRoot(theirs)).toThrow(/belongs to uid 65534/);
  });

  it('leaves a parent only its owner can write to alone', () => {
    const root = path.join(shared, 'private-parent', 'bash-broker');
    fs.mkdirSync(path.dirname(root), { mode: 0o755 });
    ensureOwnRoot(root);
    expect(fs.existsSync(root)).toBe(false); // made later, with the rest of the path
  });
});
