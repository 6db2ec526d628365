/**
 * The mount table of a local session's root (the session init's STAGE/fstab, sessionInit.c), made
 * from the host's own mounts. The session's root is an overlay of the host's `/`; an overlay shows
 * its lower filesystem alone, never the mounts on top of it, so each of those is decided here:
 *
 * - Made fresh for the session: `/dev` (a directory of its tmpfs with a few device nodes, as the
 *   container case), its own `devpts` and `mqueue`, a `proc` of its pid namespace with Docker's
 *   masks, and a read-only `sysfs`. The host's own are never shown: its /dev holds its disks, its
 *   /sys/fs/cgroup the broker's confinement, its /proc the host's processes.
 * - Overlaid: the host's directory mounts of data filesystems near the top (`/tmp`, `/run`, `/home`,
 *   `/var/tmp`... where they are mounts of their own), each with an upper layer of its own on the
 *   session's tmpfs, so the session sees them as the host has them and writes over them in private.
 * - Bound read-only: the host's file mounts under /etc (a host that is itself a container gets its
 *   /etc/hosts, /etc/hostname and /etc/resolv.conf so): an overlay takes only directories, and a
 *   writable bind would let a session change the host's file.
 * - Left out: mounts deeper than two levels (an engine's container roots and the like, which
 *   sessions do not need and which come and go: a mount in the table that is gone fails the session's
 *   start), those under /mnt and /media (removable, or another program's), kernel and special
 *   filesystems, and the working directories under /tmp/s (the session init binds the lease's own).
 *   Where a mount is left out, the session sees the directory under it, from the root's overlay.
 */
export interface HostMount {
  /** Where it is mounted, as /proc/self/mountinfo escapes it (\040 for a space). */
  target: string;
  fsType: string;
}

export interface SessionTable {
  /** The table's lines, in order. */
  lines: string[];
  /** Directories the template must hold (relative to it): the carried overlays' upper and work layers. */
  dirs: string[];
}

/** Kernel and special filesystems: never carried into a session. */
const SPECIAL = new Set(['proc', 'sysfs', 'cgroup', 'cgroup2', 'devpts', 'mqueue', 'devtmpfs', 'debugfs', 'tracefs', 'securityfs', 'pstore', 'bpf', 'configfs', 'fusectl', 'hugetlbfs', 'binfmt_misc', 'autofs', 'efivarfs', 'nsfs', 'rpc_pipefs', 'selinuxfs', 'overlay']);
const LEFT_OUT = /^\/(proc|sys|dev|mnt|media|tmp\/s)(\/|$)/;
const MAX_DEPTH = 2;
/** Docker's own masks of /proc (hidden files, empty directories, read-only parts). */
const PROC_HIDDEN_FILES = ['kcore', 'keys', 'timer_list', 'sched_debug', 'latency_stats', 'timer_stats'];
const PROC_HIDDEN_DIRS = ['acpi', 'scsi', 'asound'];
const PROC_READ_ONLY = ['bus', 'fs', 'irq', 'sys', 'sysrq-trigger'];

/** The visible mounts of /proc/self/mountinfo: the last one mounted at a path hides those before it. */
export function parseMountinfo(text: string): HostMount[] {
  const byTarget = new Map<string, HostMount>();
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (right === undefined) continue;
    const target = left.split(' ')[4];
    const fsType = right.split(' ')[0];
    if (target === undefined || fsType === undefined) continue;
    byTarget.delete(target); // re-inserted last: the order stays the mount order
    byTarget.set(target, { target, fsType });
  }
  return [...byTarget.values()];
}

export interface TableInputs {
  mounts: readonly HostMount[];
  /** Where the session's tmpfs is mounted during the setup (the init's STAGE). */
  stage: string;
  /** What a host path is: a directory, another kind, or missing. */
  kindOf(target: string): 'dir' | 'file' | null;
}

function depth(target: string): number {
  return target.split('/').filter(Boolean).length;
}

export function hostSessionTable({ mounts, stage, kindOf }: TableInputs): SessionTable {
  const T = stage;
  const R = `${stage}/r`;
  const lines = [
    `bkr-root ${R} overlay lowerdir=/,upperdir=${T}/u,workdir=${T}/w`,
    `${T}/d ${R}/dev none bind`,
    `devpts ${R}/dev/pts devpts newinstance,ptmxmode=0666,mode=620,gid=5`,
    `mqueue ${R}/dev/mqueue mqueue defaults`,
    `proc ${R}/proc proc nosuid,nodev,noexec`,
  ];
  // Hidden behind the session's own /dev/null, never the host's: a chmod of /proc/keys would change the host's.
  for (const f of PROC_HIDDEN_FILES) if (kindOf(`/proc/${f}`)) lines.push(`${R}/dev/null ${R}/proc/${f} none bind`);
  for (const f of PROC_HIDDEN_DIRS) if (kindOf(`/proc/${f}`) === 'dir') lines.push(`tmpfs ${R}/proc/${f} tmpfs ro`);
  for (const f of PROC_READ_ONLY) if (kindOf(`/proc/${f}`)) lines.push(`/proc/${f} ${R}/proc/${f} none bind`, `/proc/${f} ${R}/proc/${f} none remount,bind,ro`);
  lines.push(`sysfs ${R}/sys sysfs ro,nosuid,nodev,noexec`);
  const dirs: string[] = [];
  // Parents before what is mounted inside them.
  const carried = mounts.filter((m) => m.target !== '/' && !LEFT_OUT.test(m.target) && !SPECIAL.has(m.fsType) && !m.fsType.startsWith('fuse'));
  carried.sort((a, b) => depth(a.target) - depth(b.target));
  for (const { target } of carried) {
    const kind = kindOf(target);
    // Overlay options are split at ',' and ':' (and the table at blanks): such a path is left out.
    if (/[,:\\]/.test(target)) continue;
    if (kind === 'dir' && depth(target) <= MAX_DEPTH) {
      const n = dirs.length / 2;
      dirs.push(`u${n}`, `w${n}`);
      lines.push(`bkr-carried ${R}${target} overlay lowerdir=${target},upperdir=${T}/u${n},workdir=${T}/w${n}`);
    } else if (kind === 'file' && target.startsWith('/etc/')) {
      lines.push(`${target} ${R}${target} none bind`, `${target} ${R}${target} none remount,bind,ro`);
    }
  }
  return { lines, dirs };
}
