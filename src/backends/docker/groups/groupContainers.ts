/**
 * Dedicated sandbox containers for sandbox groups (core/ports/sandboxContainers.ts), one
 * per sandbox, each with its own limits: `cpu_cores` a CFS quota (NanoCpus), `ram_gb` a memory limit
 * with no swap beyond it, `disk_gb` an ext4 filesystem of that size (loopDisk.ts) as the only
 * writable place (read-only root). Its tools and the broker's helpers are a read-only directory;
 * its database sockets another (socketForwarder.ts). The terminal is the workspaces' docker exec
 * with a TTY (dockerTerminal.ts), its kills through a control shell, as in the pool's containers.
 */
import Dockerode from 'dockerode';
import path from 'node:path';
import { promises as fs } from 'node:fs';
import type { ContainerHealth, TerminalProcess } from '../../../core/ports/backend';
import type { SandboxContainerSpec, SandboxContainers, StartedSandboxContainer, ToolRun } from '../../../core/ports/sandboxContainers';
import { BackendError, errorMessage } from '../../../common/errors';
import type { BrokerConfig } from '../../../config/config';
import { ControlShell } from '../control/controlShell';
import { execChannelOpener } from '../shells/channel';
import { openDockerTerminal } from '../terminals/dockerTerminal';
import { checkContainerHealth } from '../containers/containerHealth';
import { ContainerRemovals } from '../containers/containerRemovals';
import { LABEL_DEPLOYMENT, LABEL_INSTANCE } from '../containers/containerSpec';
import { DISK_ENFORCEMENT, LoopDisk, mountsUnder, unmount } from './loopDisk';
import { FORWARDER_FILE, FORWARDER_PY, SOCKET_DIR_IN_CONTAINER } from './socketForwarder';
import { runInContainer } from './containerRun';

/** Marks a container as a group's sandbox (the pool's sweep and this one's never take each other's). */
export const LABEL_GROUP = 'io.bash-broker.group';
const FILES_DIR = '/opt/sandbox';
const WORKDIR = '/workspace';

export type GroupContainerOptions = Pick<BrokerConfig['docker'], 'deployment' | 'pidsLimit' | 'networkMode' | 'pingTimeoutMs' | 'stallTimeoutMs' | 'startTimeoutMs'> & {
  image: string;
};

export class DockerSandboxContainers implements SandboxContainers {
  readonly kind = 'docker';
  private readonly removals: ContainerRemovals;
  private terminals = 0;

  constructor(
    private readonly docker: Dockerode,
    private readonly options: GroupContainerOptions,
    private readonly instance: string,
  ) {
    this.removals = new ContainerRemovals(docker);
  }

  async start(spec: SandboxContainerSpec): Promise<StartedSandboxContainer> {
    const filesDir = path.join(spec.hostDir, 'files');
    await fs.mkdir(path.join(filesDir, 'tools'), { recursive: true });
    for (const file of [...spec.files, { name: FORWARDER_FILE, content: Buffer.from(FORWARDER_PY) }]) {
      await fs.writeFile(path.join(filesDir, file.name), file.content, { mode: 0o644 });
    }
    const disk = await LoopDisk.make(spec.hostDir, spec.limits.diskBytes);
    const name = `bash-broker-${this.options.deployment}-g${spec.groupId}-${spec.sandboxId}`.replace(/[^a-zA-Z0-9_.-]/g, '-');
    const deadline = AbortSignal.timeout(this.options.startTimeoutMs);
    let container: Dockerode.Container | null = null;
    try {
      container = await this.docker.createContainer(this.createOptions(name, spec, filesDir, disk, deadline));
      await container.start({ abortSignal: deadline } as Dockerode.ContainerStartOptions);
      const control = await ControlShell.open(container.id, execChannelOpener(container));
      return new DockerSandboxContainer(this, this.docker, container, name, control, disk, this.options);
    } catch (err) {
      if (container) await this.removals.forceRemove(container.id).catch(() => undefined);
      await disk.remove().catch(() => undefined);
      const why = deadline.aborted ? `the engine did not create and start it within ${this.options.startTimeoutMs / 1000} s` : errorMessage(err);
      throw new BackendError(`sandbox ${spec.sandboxId}'s container failed to start: ${why}`);
    }
  }

  async sweep(hostRoot: string): Promise<number> {
    const stale = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_GROUP}=${this.options.deployment}`] } });
    const mine = stale.filter((c) => c.Labels[LABEL_INSTANCE] !== this.instance);
    await Promise.all(mine.map((c) => this.removals.forceRemove(c.Id)));
    for (const mount of await mountsUnder(hostRoot)) await unmount(mount).catch(() => undefined);
    return mine.length;
  }

  remove(containerId: string): Promise<void> {
    return this.removals.forceRemove(containerId);
  }

  nextTerminalTag(sandboxName: string): string {
    return `BROKER_SESSION_TAG=${this.instance}-${sandboxName}-t${++this.terminals}`;
  }

  private createOptions(name: string, spec: SandboxContainerSpec, filesDir: string, disk: LoopDisk, abortSignal: AbortSignal): Dockerode.ContainerCreateOptions & { abortSignal: AbortSignal } {
    const forwards = spec.forwards.map((f) => [f.port, `${SOCKET_DIR_IN_CONTAINER}/${path.basename(f.hostSocketPath)}`]);
    const binds = [`${disk.workspaceDir}:${WORKDIR}`, `${disk.tmpDir}:/tmp`, `${filesDir}:${FILES_DIR}:ro`];
    if (spec.socketDir) binds.push(`${spec.socketDir}:${SOCKET_DIR_IN_CONTAINER}:ro`);
    const env = { ...spec.env, HOME: WORKDIR, TMPDIR: '/tmp' };
    return {
      abortSignal,
      name,
      Image: this.options.image,
      // The main process forwards the attachments' sockets (or waits, with none); the terminal and the tools are execs.
      Entrypoint: ['python3', `${FILES_DIR}/${FORWARDER_FILE}`, JSON.stringify(forwards)],
      Cmd: [],
      WorkingDir: WORKDIR,
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      Labels: { [LABEL_DEPLOYMENT]: `${this.options.deployment}-groups`, [LABEL_INSTANCE]: this.instance, [LABEL_GROUP]: this.options.deployment },
      HostConfig: {
        Init: true,
        NanoCpus: Math.round(spec.limits.cpuCores * 1e9),
        Memory: spec.limits.memoryBytes,
        MemorySwap: spec.limits.memoryBytes,
        PidsLimit: this.options.pidsLimit,
        NetworkMode: this.options.networkMode,
        ReadonlyRootfs: true,
        Binds: binds,
      },
    };
  }
}

class DockerSandboxContainer implements StartedSandboxContainer {
  readonly ref: { id: string; name: string };
  readonly filesDir = FILES_DIR;
  readonly workdir = WORKDIR;
  readonly diskEnforcement = DISK_ENFORCEMENT;
  private removed: Promise<void> | null = null;

  constructor(
    private readonly owner: DockerSandboxContainers,
    private readonly docker: Dockerode,
    private readonly container: Dockerode.Container,
    name: string,
    private readonly control: ControlShell,
    private readonly disk: LoopDisk,
    private readonly options: GroupContainerOptions,
  ) {
    this.ref = { id: container.id, name };
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
      await this.control.close().catch(() => undefined);
      await this.owner.remove(this.container.id);
      await this.disk.remove();
    })();
    return this.removed;
  }
}
