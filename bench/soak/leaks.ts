/**
 * What must be gone when the soak ends. Inside each container (before shutdown, pool settled): only
 * docker-init, the idle entrypoint bash, and exactly one bash per session plus the control shell's
 * signal lane and, once it was used, its fs lane (src/backends/docker/controlShell.ts).
 * On the host (after shutdown): no child of the broker, no containerd shim of its containers, and no
 * container of its deployment.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import { LABEL_DEPLOYMENT } from '../../src/backends/docker/dockerBackend';
import { SHELL_CMD } from '../../src/backends/docker/dockerShell';
import { cmdline, procAlive } from '../../test/helpers/procs';
import { mapLimit, sleep } from '../lib/stats';

const run = promisify(execFile);
const PS = ['ps', '-eo', 'pid=,ppid=,stat=,args='];
/**
 * A session or control shell: as exec'd by docker, or after a recycle's `exec -c` (bash's full path,
 * its environment restored from an rc file: src/core/shellRecycle.ts).
 */
const SESSION_SHELL = new RegExp(`^(\\S*/)?(${SHELL_CMD.join(' ')}|bash --rcfile /dev/fd/3 ${SHELL_CMD.slice(2).join(' ')})$`);

export interface ContainerProcesses {
  containers: number;
  /** `<container name>: <ps line>` of every process that should not be there. */
  leaks: string[];
  /** Zombies whose parent is a live session shell (see unexpectedProcesses). */
  zombiesOfShells: number;
}

export async function deploymentContainers(docker: Dockerode, deployment: string): Promise<Dockerode.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${LABEL_DEPLOYMENT}=${deployment}`] } });
}

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
  const shellPids = new Set(rows.filter((r) => r.m && r.m[2] === '0' && SESSION_SHELL.test(r.m[4])).map((r) => Number(r.m![1])));
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
    else if (ppid === 1 && args === 'bash') continue; // the entrypoint, idling on its stdin
    else if (shellPids.has(pid) || (ppid === 0 && args === PS.join(' '))) continue; // the shells; this probe
    else leaks.push(line);
  }
  // The sessions, the signal lane, and the fs lane unless it was never opened (or was just discarded).
  if (shellPids.size < perContainer + 1 || shellPids.size > perContainer + 2) {
    leaks.push(`${shellPids.size} session/control shells, want ${perContainer + 1} or ${perContainer + 2}`);
  }
  return { leaks, zombiesOfShells };
}

export async function containerProcesses(docker: Dockerode, deployment: string, perContainer: number): Promise<ContainerProcesses> {
  const containers = await deploymentContainers(docker, deployment);
  let zombiesOfShells = 0;
  const leaks = await mapLimit(containers, 4, async (c) => {
    const name = c.Names[0]?.replace(/^\//, '') ?? c.Id.slice(0, 12);
    try {
      const { stdout } = await run('docker', ['exec', c.Id, ...PS], { timeout: 30_000 });
      const found = unexpectedProcesses(stdout, perContainer);
      zombiesOfShells += found.zombiesOfShells;
      return found.leaks.map((l) => `${name}: ${l}`);
    } catch (err) {
      return [`${name}: ps failed: ${(err as Error).message.split('\n')[0]}`];
    }
  });
  return { containers: containers.length, leaks: leaks.flat(), zombiesOfShells };
}

/** Host pids whose parent is `pid`, and those whose command line names one of `containerIds` (shims). */
export function hostProcessesOf(pid: number, containerIds: string[]): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
    } catch {
      continue;
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const cmd = cmdline(Number(name));
    if (ppid === pid || containerIds.some((id) => cmd.includes(id))) found.push(Number(name));
  }
  return found;
}

/** The pids of `pids` still alive after up to `graceMs` (shims exit a moment after their container). */
export async function stillAlive(pids: number[], graceMs: number): Promise<string[]> {
  const deadline = Date.now() + graceMs;
  let alive = pids.filter(procAlive);
  while (alive.length > 0 && Date.now() < deadline) {
    await sleep(250);
    alive = alive.filter(procAlive);
  }
  return alive.map((p) => `${p}: ${cmdline(p)}`);
}
