/**
 * Preloaded (`node -r`) into the confined broker of the local abuse suite, which runs as pid 1 of its
 * own pid namespace: the namespace's init survives `kill -9 -1` from inside (kernel rule), but it
 * also inherits every orphan, and libuv reaps only the children it spawned. Without this, every
 * process a cleanup kills after its parent (a fork bomb: all of them) would stay a zombie of the
 * broker and hold its pid against the pids limit for ever. Zombie children that Node did not spawn
 * are reaped with waitpid(pid) through a tiny addon (initReaper.c), never waitpid(-1).
 */
import fs from 'node:fs';
import { ChildProcess } from 'node:child_process';

const SWEEP_MS = 100;
const addonPath = process.env.CONFINE_REAPER_ADDON;
if (!addonPath) throw new Error('initReaper: CONFINE_REAPER_ADDON is not set');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const addon = require(addonPath) as { reap(pid: number): number };

/** Pids of the children Node spawned and has not seen exit yet: libuv's, never ours to reap. */
const spawned = new Set<number>();
// Every child_process API (spawn, exec, fork, ...) goes through this internal, untyped method.
const proto = ChildProcess.prototype as unknown as { spawn(this: ChildProcess, ...args: unknown[]): unknown };
const spawn = proto.spawn;
proto.spawn = function (this: ChildProcess, ...args: unknown[]) {
  const result = spawn.apply(this, args);
  const pid = this.pid;
  if (pid !== undefined) {
    spawned.add(pid);
    this.once('exit', () => spawned.delete(pid));
  }
  return result;
};

function zombieChildren(): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (f[0] === 'Z' && Number(f[1]) === process.pid) found.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}

setInterval(() => {
  for (const pid of zombieChildren()) if (!spawned.has(pid)) addon.reap(pid);
}, SWEEP_MS).unref();
