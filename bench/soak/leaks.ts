/**
 * What must be gone when the soak ends. Inside each container (before shutdown, pool settled): only
 * docker-init, the entrypoint bash (the spawner of src/backends/docker/shells/fifoSpawner.ts), and exactly
 * one bash per session plus the control shell's signal lane and, once it was used, its fs lane
 * (src/backends/docker/control/controlShell.ts), each either a docker exec or spawned by the entrypoint
 * through a waiting wrapper subshell (a fork of the entrypoint, same command line).
 * On the host (after shutdown): no child of the broker, no containerd shim of its containers, and no
 * container of its deployment.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import { LABEL_DEPLOYMENT } from '../../src/backends/docker/dockerBackend';
import { kindFilter } from '../../src/backends/docker/containers/labels';
import type { ContainerKind } from '../../src/core/ports/containers';
import { PS, unexpectedProcesses } from '../../devtools/containerPs';
import { cmdline, procAlive } from '../../devtools/procs';
import { mapLimit, sleep } from '../lib/stats';

const run = promisify(execFile);

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

/** The deployment's containers of one kind (pool, lifecycle, group, task). */
export async function kindContainers(docker: Dockerode, deployment: string, kind: ContainerKind): Promise<Dockerode.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: kindFilter(deployment, kind) });
}

/** The pool's containers only: a group sandbox's or a task's has processes of its own, and must be gone. */
export async function containerProcesses(docker: Dockerode, deployment: string, perContainer: number): Promise<ContainerProcesses> {
  const containers = await kindContainers(docker, deployment, 'pool');
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
