/**
 * Host-side cleanup of a private dockerd's directory (see privateDockerd.ts), for when the daemon
 * cannot be asked: it was SIGKILLed, or a previous test run crashed and left it. Everything here is
 * confined to that one directory: processes are picked by their command line naming the directory
 * (dockerd, its containerd, the shims) or by their cgroup naming a container id read from the
 * directory's own `data/containers`; mounts by their mount point under it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

/** Every live pid of the host, with its command line and cgroup file (empty when unreadable). */
function hostProcesses(): { pid: number; cmdline: string; cgroup: string }[] {
  const out: { pid: number; cmdline: string; cgroup: string }[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const read = (file: string) => {
      try {
        return fs.readFileSync(`/proc/${name}/${file}`, 'latin1');
      } catch {
        return '';
      }
    };
    const cmdline = read('cmdline').split('\0').join(' ');
    if (cmdline === '') continue; // gone, or a zombie (nothing to kill; its parent reaps it)
    out.push({ pid: Number(name), cmdline, cgroup: read('cgroup') });
  }
  return out;
}

/**
 * Host pids that belong to any of `containerIds` (full 64-hex ids): processes in their cgroups and
 * the containerd shims that run them (`-id <id>` on the shim's command line).
 */
export function hostPidsOfContainers(containerIds: readonly string[]): number[] {
  if (containerIds.length === 0) return [];
  return hostProcesses()
    .filter((p) => containerIds.some((id) => p.cgroup.includes(id) || p.cmdline.includes(`-id ${id}`)))
    .map((p) => p.pid);
}

/** Container ids the private daemon in `dir` ever knew (its on-disk container store). */
export function containerIdsIn(dir: string): string[] {
  try {
    return fs.readdirSync(path.join(dir, 'data', 'containers')).filter((n) => /^[0-9a-f]{64}$/.test(n));
  } catch {
    return [];
  }
}

/** SIGKILLs every process of `dir`'s daemon (dockerd, containerd, shims, container processes) until none is left. */
export async function killEverythingOf(dir: string): Promise<void> {
  const mark = `${dir}/`;
  for (let pass = 0; pass < 50; pass++) {
    const ids = containerIdsIn(dir);
    const pids = hostProcesses()
      .filter((p) => p.cmdline.includes(mark) || ids.some((id) => p.cgroup.includes(id) || p.cmdline.includes(`-id ${id}`)))
      .map((p) => p.pid);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`processes of ${dir} survive SIGKILL`);
}

/** Mount points at or under `dir`, deepest first (mountinfo escapes spaces and such as \ooo). */
export function mountsUnder(dir: string): string[] {
  const points = fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter((p) => p === dir || p.startsWith(`${dir}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Unmounts everything under `dir`; a mount can be stacked (dockerd re-binds its data root on each start). */
export function unmountAll(dir: string): void {
  for (let pass = 0; pass < 20; pass++) {
    const points = mountsUnder(dir);
    if (points.length === 0) return;
    for (const p of points) {
      if (spawnSync('umount', [p]).status !== 0) spawnSync('umount', ['-l', p]);
    }
  }
  throw new Error(`mounts under ${dir} will not go: ${mountsUnder(dir).join(', ')}`);
}

/** Removes the (empty) cgroup v1 directories dockerd made for these containers; best effort. */
export function removeCgroups(containerIds: readonly string[]): void {
  let controllers: string[];
  try {
    controllers = fs.readdirSync('/sys/fs/cgroup');
  } catch {
    return;
  }
  for (const c of controllers) {
    for (const id of containerIds) {
      try {
        fs.rmdirSync(`/sys/fs/cgroup/${c}/docker/${id}`);
      } catch {
        /* absent, or not a v1 hierarchy */
      }
    }
  }
}

/**
 * Kills, unmounts and deletes `dir`. Refuses to delete while anything is still mounted under it:
 * a recursive delete must never walk into a mount.
 */
export async function destroyDir(dir: string): Promise<void> {
  const ids = containerIdsIn(dir);
  await killEverythingOf(dir);
  unmountAll(dir);
  removeCgroups(ids);
  if (mountsUnder(dir).length > 0) throw new Error(`not deleting ${dir}: still mounted`);
  fs.rmSync(dir, { recursive: true, force: true });
}
