/**
 * What may run inside a session container of the docker backend (used by the soak and the Docker
 * suite): docker-init, the entrypoint bash (the spawner of src/backends/docker/shells/fifoSpawner.ts), and
 * one bash per session plus the control shell's signal lane and, once it was used, its fs lane
 * (src/backends/docker/control/controlShell.ts), each either a docker exec or spawned by the entrypoint
 * through a waiting wrapper subshell (a fork of the entrypoint, same command line). With per-lease
 * isolation (src/backends/docker/isolation/) a session's shell is two processes further down: the
 * wrapper's `unshare` (or, for an extra shell of a session, `nsenter`) and its namespace's init, a
 * `bash -c` of the setup named `bkr-session` (or `bkr-join`); or, through the session init
 * (sessionInit.c), its waiter and its namespace's pid 1, both `session-init session|join ...`.
 */
import { SHELL_CMD } from '../src/backends/docker/shells/channel';

export const PS = ['ps', '-eo', 'pid=,ppid=,stat=,args='];
/**
 * A session or control shell: as exec'd by docker, or after a recycle's `exec -c` (bash's full path,
 * its environment restored from an rc file: src/backends/shellRecycle.ts).
 */
export const SESSION_SHELL = new RegExp(`^(\\S*/)?(${SHELL_CMD.join(' ')}|bash --rcfile /dev/fd/3 ${SHELL_CMD.slice(2).join(' ')})$`);

/**
 * Classifies `ps` output of one container. A zombie whose parent is a live session shell is not a
 * leak but counted apart: a recycle's `exec -c` can inherit a child killed a moment before, which the
 * fresh bash reaps at its next SIGCHLD (the next lease's first fork).
 */
export function unexpectedProcesses(psOutput: string, perContainer: number): { leaks: string[]; zombiesOfShells: number } {
  const rows = psOutput
    .split('\n')
    .filter((l) => l.trim())
    .map((line) => ({ line: line.trim(), m: /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line) }));
  const entry = rows.find((r) => r.m && r.m[2] === '1' && /^bash( -c|$)/.test(r.m[4]));
  const entryPid = entry ? Number(entry.m![1]) : -1;
  // The entrypoint's wrappers: forks of it (same command line), each waiting for one spawned shell.
  const wrappers = new Set(rows.filter((r) => r.m && Number(r.m[2]) === entryPid && r.m[4] === entry!.m![4]).map((r) => Number(r.m![1])));
  const childrenOf = (parents: Set<number>, args: RegExp): Set<number> =>
    new Set(rows.filter((r) => r.m && parents.has(Number(r.m[2])) && args.test(r.m[4])).map((r) => Number(r.m![1])));
  // Through the session init, both levels are the init's own command line (the waiter, then the namespace's pid 1).
  const SESSION_INIT = /^\S*session-init (session|join) /;
  const launchers = childrenOf(wrappers, new RegExp(`^(unshare -m -p -i -f --propagation private|nsenter -t \\d+ -p -i) -- bash -c .* bkr-(session|join) |${SESSION_INIT.source.slice(1)}`));
  const inits = childrenOf(launchers, new RegExp(`^bash -c .* bkr-(session|join) |${SESSION_INIT.source.slice(1)}`));
  const shellPids = new Set(
    rows.filter((r) => r.m && (r.m[2] === '0' || wrappers.has(Number(r.m[2])) || inits.has(Number(r.m[2]))) && SESSION_SHELL.test(r.m[4])).map((r) => Number(r.m![1])),
  );
  const wrapped = new Set(rows.filter((r) => r.m && shellPids.has(Number(r.m[1]))).map((r) => Number(r.m![2])));
  // An isolated shell's init and launcher are there for it; so is the wrapper of a launcher whose shell lives.
  for (const init of [...inits].filter((pid) => wrapped.has(pid))) {
    const launcher = Number(rows.find((r) => r.m && Number(r.m[1]) === init)!.m![2]);
    wrapped.add(launcher);
    wrapped.add(Number(rows.find((r) => r.m && Number(r.m[1]) === launcher)!.m![2]));
  }
  const leaks: string[] = [];
  let zombiesOfShells = 0;
  for (const { line, m } of rows) {
    if (!m) {
      leaks.push(`unparsed: ${line}`);
      continue;
    }
    const [pid, ppid, stat, args] = [Number(m[1]), Number(m[2]), m[3], m[4]];
    if (stat.startsWith('Z')) {
      if (shellPids.has(ppid)) zombiesOfShells++;
      else leaks.push(`zombie: ${line}`);
    } else if (pid === 1 && args.startsWith('/sbin/docker-init')) continue;
    else if (pid === entryPid) continue; // the entrypoint: spawner, or idling on its stdin
    else if ((wrappers.has(pid) || launchers.has(pid) || inits.has(pid)) && wrapped.has(pid)) continue; // waiting for its shell
    else if (shellPids.has(pid) || (ppid === 0 && /^ps -eo /.test(args))) continue; // the shells; this probe
    else leaks.push(line);
  }
  // The sessions, the signal lane, and the fs lane unless it was never opened (or was just discarded).
  if (shellPids.size < perContainer + 1 || shellPids.size > perContainer + 2) {
    leaks.push(`${shellPids.size} session/control shells, want ${perContainer + 1} or ${perContainer + 2}`);
  }
  return { leaks, zombiesOfShells };
}
