/**
 * A sandbox's disk limit. overlay2 on ext4 (this engine's storage) cannot cap a container's
 * writable layer (`--storage-opt size` needs xfs with project quotas), and a tmpfs would be charged
 * to the container's memory. So each sandbox gets an ext4 filesystem of exactly its `disk_gb`, in a
 * sparse image file on the host, mounted through a loop device and bind-mounted into the container
 * (its /workspace and /tmp), while the image's root filesystem is mounted read-only: everything the
 * sandbox can write lands on that filesystem, and a full one is ENOSPC inside the sandbox alone.
 * Needs root on the engine's host (mount, losetup); `mount -o loop` frees the loop device at umount.
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { BackendError, errorMessage } from '../../../common/errors';

const run = promisify(execFile);
const COMMAND_TIMEOUT_MS = 60_000;

export const DISK_ENFORCEMENT = 'an ext4 filesystem of disk_gb on a loop device (a sparse image on the host), mounted at /workspace and /tmp; the root filesystem is read-only';

export class LoopDisk {
  private removed: Promise<void> | null = null;

  private constructor(
    readonly image: string,
    readonly mountDir: string,
  ) {}

  /** Makes, formats and mounts the filesystem; `workspace` and `tmp` are its two directories. */
  static async make(dir: string, sizeBytes: number): Promise<LoopDisk> {
    const disk = new LoopDisk(path.join(dir, 'disk.img'), path.join(dir, 'disk'));
    try {
      await fs.mkdir(disk.mountDir, { recursive: true });
      const file = await fs.open(disk.image, 'w', 0o600);
      await file.truncate(sizeBytes).finally(() => file.close());
      // No journal and lazy inode tables: formatting a 10 GiB image takes milliseconds, not a write of its tables.
      await command('mkfs.ext4', ['-q', '-F', '-m', '0', '-O', '^has_journal', '-E', 'lazy_itable_init=1,nodiscard', disk.image]);
      await command('mount', ['-o', 'loop,nosuid,nodev', disk.image, disk.mountDir]);
      await fs.mkdir(path.join(disk.mountDir, 'workspace'));
      await fs.mkdir(path.join(disk.mountDir, 'tmp'));
      await fs.chmod(path.join(disk.mountDir, 'tmp'), 0o1777);
      return disk;
    } catch (err) {
      await disk.remove().catch(() => undefined);
      throw new BackendError(`the sandbox's disk could not be made (a loop-mounted ext4 image needs root and loop devices on the engine's host): ${errorMessage(err)}`);
    }
  }

  get workspaceDir(): string {
    return path.join(this.mountDir, 'workspace');
  }

  get tmpDir(): string {
    return path.join(this.mountDir, 'tmp');
  }

  /** Unmounts (after the container is gone) and deletes the image. Safe to call twice. */
  remove(): Promise<void> {
    this.removed ??= (async () => {
      if (await isMountPoint(this.mountDir)) await unmount(this.mountDir);
      await fs.rm(this.image, { force: true });
      await fs.rm(this.mountDir, { recursive: true, force: true });
    })();
    return this.removed;
  }
}

/** A lazy unmount when a plain one finds it busy (a process of the removed container still closing). */
export async function unmount(dir: string): Promise<void> {
  try {
    await command('umount', [dir]);
  } catch {
    await command('umount', ['-l', dir]);
  }
}

/** Mount points at or under `root`, deepest first (from this process's mount table). */
export async function mountsUnder(root: string): Promise<string[]> {
  const table = await fs.readFile('/proc/self/mountinfo', 'utf8');
  const prefix = root.endsWith('/') ? root : `${root}/`;
  return table
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => !!p)
    .map((p) => p.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter((p) => p === root || p.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

async function isMountPoint(dir: string): Promise<boolean> {
  return (await mountsUnder(dir)).includes(dir);
}

async function command(file: string, args: string[]): Promise<void> {
  try {
    await run(file, args, { timeout: COMMAND_TIMEOUT_MS });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(`${file} ${args.join(' ')}: ${stderr || errorMessage(err)}`, { cause: err });
  }
}
