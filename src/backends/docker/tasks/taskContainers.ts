/**
 * Task sandboxes on Docker: one container of its own per sandbox, from the task image (Debian, git,
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
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Dockerode from 'dockerode';
import { BackendError, errorMessage } from '../../../common/errors';
import type { TaskConfig } from '../../../config/taskConfig';
import type { CloneSource, TaskBackend, TaskContainer } from '../../../core/ports/taskPorts';
import { ContainerRemovals } from '../containers/containerRemovals';
import { ANTHROPIC_KEY, OPENAI_KEY, TaskRelay, type RelayRoute } from './taskRelay';
import { UnixDaemonLink } from './taskDaemonLink';

/** The deployment a task container belongs to (not the pool's label: the pool's start sweep must not take these). */
export const LABEL_TASK_DEPLOYMENT = 'io.bash-broker.task-deployment';
export const LABEL_TASK_ID = 'io.bash-broker.task-id';

const MOUNT_DIR = '/run/taskd';
const GIT_DIR = '/srv/git';

export interface TaskContainerOptions {
  tasks: Pick<TaskConfig, 'image' | 'gitBase' | 'anthropicBaseUrl' | 'openaiBaseUrl' | 'socketDir' | 'networkMode' | 'keys'>;
  deployment: string;
  cpus: number;
  memoryBytes: number;
  pidsLimit: number;
  startTimeoutMs: number;
}

export class DockerTaskBackend implements TaskBackend {
  private readonly docker = new Dockerode();
  private readonly removals = new ContainerRemovals(this.docker);

  constructor(private readonly options: TaskContainerOptions) {}

  cloneSource(repo: string): CloneSource {
    const base = this.options.tasks.gitBase;
    if (base?.kind === 'url') return { relay: `/${repo}.git` };
    // Bare repos are usually `name.git`; a plain `name` directory is taken when that is what exists.
    const hostDir = base?.path ?? '/';
    const name = fs.existsSync(path.join(hostDir, `${repo}.git`)) || !fs.existsSync(path.join(hostDir, repo)) ? `${repo}.git` : repo;
    return { path: `${GIT_DIR}/${name}` };
  }

  async sweep(): Promise<number> {
    const stale = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_TASK_DEPLOYMENT}=${this.options.deployment}`] } });
    await Promise.all(stale.map((c) => this.removals.forceRemove(c.Id)));
    return stale.length;
  }

  async start(id: string): Promise<TaskContainer> {
    const dir = path.join(this.options.tasks.socketDir, id);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    // The sandbox's capability: what its daemon sends in place of a key, good on this relay only.
    const capability = `taskcap-${randomBytes(32).toString('base64url')}`;
    const relay = new TaskRelay(this.relayRoutes(), capability, this.options.tasks.keys);
    const name = `bash-broker-${this.options.deployment}-${id}`.replace(/[^a-zA-Z0-9_.-]/g, '-');
    let containerId: string | null = null;
    const remove = once(async () => {
      if (containerId) await this.removals.forceRemove(containerId);
      await relay.close().catch(() => undefined);
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const t0 = performance.now();
    const deadline = AbortSignal.timeout(this.options.startTimeoutMs);
    try {
      await relay.listen(path.join(dir, 'relay.sock'));
      const container = await this.docker.createContainer({ ...this.createOptions(name, id, dir), abortSignal: deadline } as Dockerode.ContainerCreateOptions);
      containerId = container.id;
      await container.start({ abortSignal: deadline } as Dockerode.ContainerStartOptions);
    } catch (err) {
      if (!containerId && deadline.aborted) this.removals.abandonName(name);
      await remove();
      const why = deadline.aborted ? `the engine did not create and start it within ${this.options.startTimeoutMs / 1000} s` : errorMessage(err);
      throw new BackendError(`task sandbox ${id}: its container failed to start: ${why}`);
    }
    return { link: new UnixDaemonLink(path.join(dir, 'daemon.sock')), capability, startMs: performance.now() - t0, remove };
  }

  private relayRoutes(): Record<string, RelayRoute> {
    const { tasks } = this.options;
    const routes: Record<string, RelayRoute> = { '/anthropic': { base: tasks.anthropicBaseUrl, key: ANTHROPIC_KEY }, '/openai': { base: tasks.openaiBaseUrl, key: OPENAI_KEY } };
    if (tasks.gitBase?.kind === 'url') routes['/git'] = { base: tasks.gitBase.url };
    return routes;
  }

  private createOptions(name: string, id: string, dir: string): Dockerode.ContainerCreateOptions {
    const { tasks } = this.options;
    const binds = [`${dir}:${MOUNT_DIR}`];
    if (tasks.gitBase?.kind === 'dir') binds.push(`${tasks.gitBase.path}:${GIT_DIR}:ro`);
    return {
      name,
      Image: tasks.image,
      // No secret here, nor anywhere in the sandbox: the relay attaches the keys (taskRelay.ts).
      Env: [`TASKD_SOCKET=${MOUNT_DIR}/daemon.sock`, `TASKD_RELAY_SOCKET=${MOUNT_DIR}/relay.sock`],
      Labels: { [LABEL_TASK_DEPLOYMENT]: this.options.deployment, [LABEL_TASK_ID]: id },
      HostConfig: {
        Init: true,
        NanoCpus: Math.round(this.options.cpus * 1e9),
        Memory: this.options.memoryBytes,
        PidsLimit: this.options.pidsLimit,
        NetworkMode: tasks.networkMode,
        Binds: binds,
        // A daemon that crashes comes back in the same container and resumes its saved session.
        RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 5 },
      },
    };
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  return () => (done ??= fn());
}
