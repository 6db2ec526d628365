/**
 * Optional confinement of each local session in its own cgroup v2 (pure v2 at /sys/fs/cgroup, or the
 * hybrid layout's /sys/fs/cgroup/unified). A cgroup holds every descendant whatever it does (setsid,
 * double fork, `env -i`), and `cgroup.kill` ends them all at once. Without root or cgroup v2 the
 * backend falls back to the /proc walk in localShell.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { logger } from '../../common/logger';

const CANDIDATES = ['/sys/fs/cgroup/unified', '/sys/fs/cgroup'];
const BROKER_DIR = 'bash-broker';

function cgroup2Mount(): string | null {
  let mounts: string;
  try {
    mounts = fs.readFileSync('/proc/self/mounts', 'latin1');
  } catch {
    return null;
  }
  for (const dir of CANDIDATES) {
    if (mounts.split('\n').some((l) => l.split(' ')[1] === dir && l.split(' ')[2] === 'cgroup2')) return dir;
  }
  return null;
}

/** The cgroups of one broker instance: <mount>/bash-broker/<instance>/<slot>. */
export class CgroupTree {
  private constructor(readonly root: string) {}

  /** Returns null (and says why at debug level) when cgroups cannot be used here. */
  static create(instance: string): CgroupTree | null {
    const mount = cgroup2Mount();
    if (!mount) return null;
    const base = path.join(mount, BROKER_DIR);
    try {
      fs.mkdirSync(base, { recursive: true });
      CgroupTree.sweep(base);
      const root = path.join(base, instance);
      fs.mkdirSync(root, { recursive: true });
      enableMemory(base, root);
      if (!fs.existsSync(path.join(root, 'cgroup.kill'))) throw new Error('cgroup.kill unsupported (kernel < 5.14)');
      return new CgroupTree(root);
    } catch (err) {
      logger.debug({ err }, 'cgroup v2 confinement unavailable; falling back to /proc');
      return null;
    }
  }

  /** Kills and removes groups left by broker instances that are gone (instance dir = "<pid>-<rand>"). */
  static sweep(base: string): void {
    for (const name of fs.readdirSync(base)) {
      const pid = Number(name.split('-')[0]);
      if (!Number.isInteger(pid) || pid <= 0 || fs.existsSync(`/proc/${pid}`)) continue;
      const dir = path.join(base, name);
      for (const slot of fs.readdirSync(dir, { withFileTypes: true })) {
        if (slot.isDirectory()) killAndRemove(path.join(dir, slot.name));
      }
      try {
        fs.rmdirSync(dir);
      } catch {
        /* still populated: the next start tries again */
      }
    }
  }

  slotPath(slotId: string): string {
    const dir = path.join(this.root, slotId);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  close(): void {
    for (const slot of fs.readdirSync(this.root, { withFileTypes: true })) {
      if (slot.isDirectory()) killAndRemove(path.join(this.root, slot.name));
    }
    try {
      fs.rmdirSync(this.root);
    } catch {
      /* best effort */
    }
  }
}

/**
 * Asks for the memory controller in the slots' cgroups (their peak memory and OOM kills for the
 * termination facts), level by level, where the host's v2 hierarchy has it; best effort: on a hybrid
 * host memory is a v1 controller, and the slots' memory figures are then unknown (null).
 */
function enableMemory(base: string, root: string): void {
  // Not the mount's root: that would change the whole host's hierarchy. Where the host enabled memory
  // there (systemd does), the broker's own levels can pass it on.
  for (const dir of [base, root]) {
    try {
      fs.writeFileSync(path.join(dir, 'cgroup.subtree_control'), '+memory');
    } catch {
      return;
    }
  }
}

export function addProcess(group: string, pid: number): void {
  fs.writeFileSync(path.join(group, 'cgroup.procs'), String(pid));
}

export function groupPids(group: string): number[] {
  try {
    return fs
      .readFileSync(path.join(group, 'cgroup.procs'), 'latin1')
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

export function killGroup(group: string): void {
  try {
    fs.writeFileSync(path.join(group, 'cgroup.kill'), '1');
  } catch {
    /* group already gone */
  }
}

/** Async on the hot path: the write returns only once the kernel has signalled every member (ms under load). */
export async function killGroupAsync(group: string): Promise<void> {
  await fs.promises.writeFile(path.join(group, 'cgroup.kill'), '1').catch(() => undefined);
}

function killAndRemove(group: string): void {
  killGroup(group);
  try {
    fs.rmdirSync(group);
  } catch {
    /* processes still exiting; swept next time */
  }
}
