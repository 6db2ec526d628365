/**
 * The task's helper on the Docker side of the containers' port (`{ kind: 'task' }`,
 * core/ports/containers.ts): one container of its own per task sandbox (containers/dedicatedContainers.ts), from the task image (Debian, git,
 * node, the task daemon and Pi), whose main process is the daemon.
 *
 * Why a unix socket, and no network: the daemon's API must reach Core only, and Docker 20.10's bridge
 * driver has deadlocked under load on this kind of host (every container start stuck in libnetwork's
 * endpoint setup), so the containers run with `--network none` by default. Each sandbox gets a host
 * directory, mounted at /run/taskd, holding two sockets: the daemon's (Core talks HTTP to it) and
 * Core's relay (taskRelay.ts: the model endpoints and a git server, the only way out; it alone holds
 * the LLM keys, the sandbox only a capability for its relay). Nothing else in
 * the container listens anywhere another container or the host network could reach.
 *
 * A directory of bare repos (BROKER_GIT_BASE_URL) is mounted read-only at /srv/git.
 *
 * The backend serves execd's shells in it too (ShellServing), over docker exec with a control shell
 * of its own, starting in the image's working directory (the daemon's home, where it clones the
 * repository). A container where that shell does not open still serves its task: only execd lacks it.
 */
import type Dockerode from 'dockerode';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BackendError, errorMessage } from '../../../common/errors';
import { logger } from '../../../common/logger';
import type { TaskConfig } from '../../../config/taskConfig';
import type { CloneSource } from '../../../core/ports/taskPorts';
import type { ContainerShells, DedicatedContainerSpec, TaskContainer } from '../../../core/ports/containers';
import type { DedicatedContainer, DockerDedicatedContainers } from '../containers/dedicatedContainers';
import { ContainerStartError } from '../containers/containerStart';
import { ANTHROPIC_KEY, OPENAI_KEY, TaskRelay, type RelayRoute } from './taskRelay';
import { UnixDaemonLink } from './taskDaemonLink';
import { ControlShell } from '../control/controlShell';
import { execChannelOpener } from '../shells/channel';
import { ReopeningControl, type ShellServing } from '../containers/containerLink';

const MOUNT_DIR = '/run/taskd';
const GIT_DIR = '/srv/git';

export interface TaskContainerOptions {
  tasks: Pick<TaskConfig, 'image' | 'gitBase' | 'anthropicBaseUrl' | 'openaiBaseUrl' | 'socketDir' | 'networkMode' | 'keys'>;
}

export class DockerTaskContainers {
  constructor(
    private readonly docker: Dockerode,
    private readonly dedicated: DockerDedicatedContainers,
    private readonly options: TaskContainerOptions,
    private readonly serveShells: ShellServing,
  ) {}

  cloneSource(repo: string): CloneSource {
    const base = this.options.tasks.gitBase;
    if (base?.kind === 'url') return { relay: `/${repo}.git` };
    // Bare repos are usually `name.git`; a plain `name` directory is taken when that is what exists.
    const hostDir = base?.path ?? '/';
    const name = fs.existsSync(path.join(hostDir, `${repo}.git`)) || !fs.existsSync(path.join(hostDir, repo)) ? `${repo}.git` : repo;
    return { path: `${GIT_DIR}/${name}` };
  }

  /** Before any task starts: every task container of the deployment is an earlier broker's. */
  sweep(): Promise<number> {
    return this.dedicated.sweep('task', true);
  }

  async start(id: string): Promise<TaskContainer> {
    const dir = path.join(this.options.tasks.socketDir, id);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    // The sandbox's capability: what its daemon sends in place of a key, good on this relay only.
    const capability = `taskcap-${randomBytes(32).toString('base64url')}`;
    const relay = new TaskRelay(id, this.relayRoutes(), capability, this.options.tasks.keys);
    let container: DedicatedContainer | null = null;
    let served: { control: ReopeningControl; stop: () => void; workdir: string } | null = null;
    const remove = once(async () => {
      served?.stop();
      await served?.control.close();
      await container?.remove();
      await relay.close().catch(() => undefined);
      fs.rmSync(dir, { recursive: true, force: true });
    });
    try {
      await relay.listen(path.join(dir, 'relay.sock'));
      container = await this.dedicated.start(this.containerSpec(id, dir));
    } catch (err) {
      await remove();
      const why = err instanceof ContainerStartError ? err.why : errorMessage(err);
      throw new BackendError(`task sandbox ${id}: its container failed to start: ${why}`);
    }
    let shells: ContainerShells | null = null;
    try {
      served = await this.serve(container);
      shells = { ref: container.ref, workdir: served.workdir };
    } catch (err) {
      logger.warn({ task: id, err: errorMessage(err) }, "no shell opened in the task sandbox's container: execd does not serve it");
    }
    return { link: new UnixDaemonLink(path.join(dir, 'daemon.sock')), capability, startMs: container.startMs, shells, cloneSource: (repo) => this.cloneSource(repo), remove };
  }

  /**
   * Its control shell, served to execd, and opened again after the daemon crashed (its container
   * restarts it: every process in it dies, the control shell's too). Its working directory is the image's.
   */
  private async serve(container: DedicatedContainer): Promise<{ control: ReopeningControl; stop: () => void; workdir: string }> {
    const engine = this.docker.getContainer(container.ref.id);
    const workdir = (await engine.inspect()).Config.WorkingDir || '/';
    const control = await ReopeningControl.open(() => ControlShell.open(container.ref.id, execChannelOpener(engine)));
    return { control, stop: this.serveShells(container.ref, control.control, () => control.reopen()), workdir };
  }

  private relayRoutes(): Record<string, RelayRoute> {
    const { tasks } = this.options;
    const routes: Record<string, RelayRoute> = { '/anthropic': { base: tasks.anthropicBaseUrl, key: ANTHROPIC_KEY }, '/openai': { base: tasks.openaiBaseUrl, key: OPENAI_KEY } };
    if (tasks.gitBase?.kind === 'url') routes['/git'] = { base: tasks.gitBase.url };
    return routes;
  }

  private containerSpec(id: string, dir: string): DedicatedContainerSpec {
    const { tasks } = this.options;
    const mounts = [{ hostPath: dir, containerPath: MOUNT_DIR, readOnly: false }];
    if (tasks.gitBase?.kind === 'dir') mounts.push({ hostPath: tasks.gitBase.path, containerPath: GIT_DIR, readOnly: true });
    return {
      kind: 'task',
      owner: id,
      image: tasks.image,
      // No secret here, nor anywhere in the sandbox: the relay attaches the keys (taskRelay.ts).
      env: { TASKD_SOCKET: `${MOUNT_DIR}/daemon.sock`, TASKD_RELAY_SOCKET: `${MOUNT_DIR}/relay.sock` },
      limits: { cpus: null, memoryBytes: null, pids: null },
      network: tasks.networkMode,
      mounts,
      // A daemon that crashes comes back in the same container and resumes its saved session.
      restartsOnFailure: 5,
    };
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  return () => (done ??= fn());
}
