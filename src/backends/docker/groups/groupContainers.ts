/**
 * The group's helper on the Docker side of the containers' port (`{ kind: 'group' }`,
 * core/ports/containers.ts): sandbox group members' containers, one
 * per sandbox, each started as a container of its own (containers/dedicatedContainers.ts) with its
 * own limits: `cpu_cores` a CFS quota (NanoCpus), `ram_gb` a memory limit
 * with no swap beyond it, `disk_gb` an ext4 filesystem of that size (loopDisk.ts) as the only
 * writable place (read-only root). Its tools and the broker's helpers are a read-only directory;
 * its database sockets another (socketForwarder.ts). The terminal is the workspaces' docker exec
 * with a TTY (dockerTerminal.ts), its kills through a control shell, as in the pool's containers.
 * That control shell is also the one through which the backend serves execd's shells in it
 * (ShellServing): execd reaches a member as any sandbox, over docker exec.
 */
import Dockerode from 'dockerode';
import path from 'node:path';
import { promises as fs } from 'node:fs';
import type { ContainerHealth, TerminalProcess } from '../../../core/ports/backend';
import type { ContainerShells, SandboxContainerSpec, StartedSandboxContainer, ToolRun } from '../../../core/ports/containers';
import { BackendError, errorMessage } from '../../../common/errors';
import type { BrokerConfig } from '../../../config/config';
import { ControlShell } from '../control/controlShell';
import { execChannelOpener } from '../shells/channel';
import { openDockerTerminal } from '../terminals/dockerTerminal';
import { checkContainerHealth } from '../containers/containerHealth';
import type { DedicatedContainerSpec } from '../../../core/ports/containers';
import type { DedicatedContainer, DockerDedicatedContainers } from '../containers/dedicatedContainers';
import { ContainerStartError } from '../containers/containerStart';
import { DISK_ENFORCEMENT, LoopDisk, mountsUnder, unmount } from './loopDisk';
import { FORWARDER_FILE, FORWARDER_PY, SOCKET_DIR_IN_CONTAINER } from './socketForwarder';
import { runInContainer } from './containerRun';
import type { ShellServing } from '../containers/containerLink';

const FILES_DIR = '/opt/sandbox';
const WORKDIR = '/workspace';

export type GroupContainerOptions = Pick<BrokerConfig['docker'], 'pingTimeoutMs' | 'stallTimeoutMs'> & {
  image: string;
};

export class DockerGroupContainers {
  private terminals = 0;

  constructor(
    private readonly docker: Dockerode,
    private readonly dedicated: DockerDedicatedContainers,
    private readonly options: GroupContainerOptions,
    private readonly instance: string,
    private readonly serveShells: ShellServing,
  ) {}

  async start(spec: SandboxContainerSpec): Promise<StartedSandboxContainer> {
    const filesDir = path.join(spec.hostDir, 'files');
    await fs.mkdir(path.join(filesDir, 'tools'), { recursive: true });
    for (const file of [...spec.files, { name: FORWARDER_FILE, content: Buffer.from(FORWARDER_PY) }]) {
      await fs.writeFile(path.join(filesDir, file.name), file.content, { mode: 0o644 });
    }
    const disk = await LoopDisk.make(spec.hostDir, spec.limits.diskBytes);
    let started: DedicatedContainer | null = null;
    try {
      started = await this.dedicated.start(this.containerSpec(spec, filesDir, disk));
      const container = this.docker.getContainer(started.ref.id);
      const control = await ControlShell.open(container.id, execChannelOpener(container));
      return new DockerSandboxContainer(this, this.docker, container, started, control, disk, this.options, this.serveShells(started.ref, control));
    } catch (err) {
      await started?.remove().catch(() => undefined);
      await disk.remove().catch(() => undefined);
      const why = err instanceof ContainerStartError ? err.why : errorMessage(err);
      throw new BackendError(`sandbox ${spec.sandboxId}'s container failed to start: ${why}`);
    }
  }

  /** Removes every group container (and disk mount) an earlier broker of this deployment left. */
  async sweep(hostRoot: string): Promise<number> {
    const removed = await this.dedicated.sweep('group');
    for (const mount of await mountsUnder(hostRoot)) await unmount(mount).catch(() => undefined);
    return removed;
  }

  nextTerminalTag(sandboxName: string): string {
    return `BROKER_SESSION_TAG=${this.instance}-${sandboxName}-t${++this.terminals}`;
  }

  private containerSpec(spec: SandboxContainerSpec, filesDir: string, disk: LoopDisk): DedicatedContainerSpec {
    const forwards = spec.forwards.map((f) => [f.port, `${SOCKET_DIR_IN_CONTAINER}/${path.basename(f.hostSocketPath)}`]);
    const mounts = [
      { hostPath: disk.workspaceDir, containerPath: WORKDIR, readOnly: false },
      { hostPath: disk.tmpDir, containerPath: '/tmp', readOnly: false },
      { hostPath: filesDir, containerPath: FILES_DIR, readOnly: true },
    ];
    if (spec.socketDir) mounts.push({ hostPath: spec.socketDir, containerPath: SOCKET_DIR_IN_CONTAINER, readOnly: true });
    return {
      kind: 'group',
      // Sandbox ids are a group's own: another group of this broker may have one of the same name.
      owner: `${spec.groupId}/${spec.sandboxId}`,
      image: this.options.image,
      // The main process forwards the attachments' sockets (or waits, with none); the terminal and the tools are execs.
      entrypoint: ['python3', `${FILES_DIR}/${FORWARDER_FILE}`, JSON.stringify(forwards)],
      workdir: WORKDIR,
      env: { ...spec.env, HOME: WORKDIR, TMPDIR: '/tmp' },
      limits: { cpus: spec.limits.cpuCores, memoryBytes: spec.limits.memoryBytes, pids: null, swap: false },
      network: null,
      mounts,
      readOnlyRoot: true,
    };
  }
}

class DockerSandboxContainer implements StartedSandboxContainer {
  readonly ref: { id: string; name: string };
  readonly filesDir = FILES_DIR;
  readonly workdir = WORKDIR;
  readonly diskEnforcement = DISK_ENFORCEMENT;
  readonly shells: ContainerShells;
  private removed: Promise<void> | null = null;

  constructor(
    private readonly owner: DockerGroupContainers,
    private readonly docker: Dockerode,
    private readonly container: Dockerode.Container,
    private readonly started: DedicatedContainer,
    private readonly control: ControlShell,
    private readonly disk: LoopDisk,
    private readonly options: GroupContainerOptions,
    private readonly stopServing: () => void,
  ) {
    this.ref = started.ref;
    this.shells = { ref: started.ref, workdir: WORKDIR };
  }

  openTerminal(env: Record<string, string>, size: { cols: number; rows: number }): Promise<TerminalProcess> {
    if (!this.control.alive) return Promise.reject(new BackendError(`sandbox container ${this.ref.name} has no control shell`));
    const options = { slotId: this.ref.name, cwd: WORKDIR, env, ...size };
    return openDockerTerminal(this.container, this.control, options, this.owner.nextTerminalTag(this.ref.name));
  }

  run(argv: string[], stdin: string, timeoutMs: number): Promise<ToolRun> {
    return runInContainer(this.container, argv, stdin, timeoutMs, WORKDIR);
  }

  check(): Promise<ContainerHealth> {
    return checkContainerHealth(this.docker, this.ref, () => this.control, this.options);
  }

  remove(): Promise<void> {
    this.removed ??= (async () => {
      this.stopServing();
      await this.control.close().catch(() => undefined);
      await this.started.remove();
      await this.disk.remove();
    })();
    return this.removed;
  }
}
