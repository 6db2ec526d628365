/**
 * The Docker backend: C containers from BROKER_IMAGE, S long-lived bash sessions in each, plus one
 * control shell per container for signals, cleanup and health pings. Each bash reaches the broker
 * over a channel (channel.ts): pipes the container's entrypoint spawns it on (fifoSpawner.ts, no
 * dockerd work per shell) when the broker shares a filesystem with the engine, else a `docker exec`.
 * Containers carry labels naming the deployment and the broker instance, so a later start sweeps
 * what a crash left.
 */
import Dockerode from 'dockerode';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import * as tar from 'tar-stream';
import type { ContainerHealth, ContainerRef, OpenShellOptions, SessionBackend, ShellProcess, WorkdirFile } from '../../core/backend';
import { BackendError, BadRequestError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';
import { ControlShell, PidsLimitError } from './controlShell';
import type { BrokerConfig } from '../../config/config';
import { DockerShell } from './dockerShell';
import { type ChannelOpener, execChannelOpener } from './channel';
import { FifoSpawner, SPAWNER_SCRIPT } from './fifoSpawner';
import { FifoStock } from './fifoStock';
import { defaultFifoRoot, ensureOwnRoot, inMemoryFs } from './fifoRoot';
import { ContainerPids, readPidsMount } from './sessionPids';

/** Resolved and validated in config.ts (BROKER_IMAGE, BROKER_CONTAINER_*, BROKER_NETWORK_MODE, ...). */
export type DockerBackendOptions = BrokerConfig['docker'];

export const LABEL_DEPLOYMENT = 'io.bash-broker.deployment';
export const LABEL_INSTANCE = 'io.bash-broker.instance';

/** A lease's working directory (sessionWorkdir): the only paths the fs lane creates or removes. */
const WORKDIR = /^\/tmp\/s\/[0-9a-f]+\/?$/;
/** An acquire waits this long for the fs lane's mkdir before uploading the directory instead. */
const MKDIR_TIMEOUT_MS = 5_000;
/** A big working directory takes a while to remove on a busy container. */
const RM_TIMEOUT_MS = 60_000;
/** How often a removal held by the pids limit asks again (a builtin check, no fork). */
const ROOM_POLL_MS = 250;
/** How long a started container's entrypoint has to announce itself on the pipes. */
const SPAWNER_READY_TIMEOUT_MS = 15_000;
/**
 * How long one container removal may wait for the engine. A stuck engine answers nothing; past
 * this the removal counts as failed and is retried (`unremoved`), so no caller waits for good.
 */
const REMOVE_CALL_TIMEOUT_MS = 60_000;
/**
 * How long a health check waits for the engine's `inspect`. Past it the engine's silence says
 * nothing about the container (a stuck or swamped engine), and the check goes on with the
 * container's own control lane alone: the monitor neither hangs with the engine nor replaces
 * containers that still serve leases.
 */
const INSPECT_TIMEOUT_MS = 10_000;
/**
 * A create abandoned at its deadline may still be carried out once the engine moves again, after a
 * removal by name already found nothing. So its name is retried until the engine has said "no such
 * container" for this long: a queued request is served within seconds of the engine answering.
 */
const ABANDONED_NAME_GRACE_MS = 60_000;

/** A container started but not yet connected (connectContainer): its pipes, if any. */
interface Starting {
  ref: ContainerRef;
  container: Dockerode.Container;
  spawner: FifoSpawner | null;
}

interface ContainerLink {
  control: ControlShell;
  openChannel: ChannelOpener;
  spawner: FifoSpawner | null;
  /** Per-session pids cgroups (sessionPids.ts); null when sessions share the container's limit. */
  pids: ContainerPids | null;
}

export class DockerBackend implements SessionBackend {
  readonly kind = 'docker';
  readonly docker = new Dockerode();
  readonly instance = `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private readonly links = new Map<string, ContainerLink>();
  private readonly starting = new Map<string, Starting>();
  /**
   * Whether pipes work with this engine: unknown until the first container tells. Once they failed
   * before ever working (a remote engine, a broker in a container without the shared directory),
   * later containers go straight to docker exec instead of waiting for an announcement each.
   */
  private fifoState: 'unknown' | 'works' | 'off';
  /** Per container: working directories whose removal failed, retried with the next removal there. */
  private readonly unremovedDirs = new Map<string, Set<string>>();
  /**
   * Containers whose removal failed, typically because the engine was down or restarting (the pool
   * forgets a failed container once it asked for its removal). Retried before every container start,
   * with every health check and at close, so a daemon restart leaves no container of the old
   * generation behind.
   */
  private readonly unremoved = new Set<string>();
  /**
   * Names of creates abandoned at their deadline, each with when the engine first said it has no
   * such container (null: not yet). Retried with `unremoved`; dropped ABANDONED_NAME_GRACE_MS after
   * that first "no such container", or once removed.
   */
  private readonly abandonedNames = new Map<string, number | null>();
  /** A retry of `unremoved` from the health checks is under way. */
  private removalsRetrying = false;
  private generation = 0;
  private starts = 0;
  /** The host's cgroup v1 pids mount, when per-session pids limits are wanted; see sessionPids.ts. */
  private readonly pidsMount: string | null;
  /** Whether the first container's answer about per-session pids limits was logged. */
  private pidsLogged = false;
  /** Makes the named pipes of every container (fifo transport); in the deployment's pipe directory. */
  private readonly fifoStock: FifoStock;
  /** Host directory of every deployment's pipes: the configured one, or the default chosen for this host. */
  private readonly fifoRoot: string;
  private readonly fifoRootReason: string;
  /** The root failed ensureOwnRoot: nothing under it is made or removed. */
  private fifoRootRefused = false;

  constructor(private readonly options: DockerBackendOptions) {
    this.fifoState = options.transport === 'exec' ? 'off' : 'unknown';
    const chosen = options.fifoRoot === null ? defaultFifoRoot() : { root: options.fifoRoot, reason: 'BROKER_DOCKER_FIFO_DIR' };
    this.fifoRoot = chosen.root;
    this.fifoRootReason = chosen.reason;
    this.pidsMount = options.sessionPidsLimit > 0 ? readPidsMount() : null;
    this.fifoStock = new FifoStock(path.join(this.fifoDir, `.stock-${this.instance}`));
  }

  /** Host directory of this deployment's pipes (one subdirectory per container). */
  private get fifoDir(): string {
    return path.join(this.fifoRoot, this.options.deployment);
  }

  /** Checks the engine and the image, and removes containers a previous instance of this deployment left. */
  async init(): Promise<void> {
    try {
      await this.docker.ping();
    } catch (err) {
      throw new BackendError(`Docker engine not reachable (${errorMessage(err)}); start dockerd or set DOCKER_HOST`);
    }
    try {
      await this.docker.getImage(this.options.image).inspect();
    } catch {
      throw new BackendError(`image ${this.options.image} not found locally; build it (scripts/docker-images.sh) or set BROKER_IMAGE`);
    }
    const removed = await this.sweep();
    if (removed > 0) logger.info({ removed, deployment: this.options.deployment }, 'removed containers left by an earlier broker');
    // Their pipes too: the directory is this deployment's, and its containers are gone.
    if (this.options.transport !== 'exec') await this.preparePipesRoot();
  }

  /**
   * Checks the pipes' root is safe (without one, pipes are off), then clears this deployment's old
   * pipes. In that order: a root someone else controls (a link, say) is never removed through.
   */
  private async preparePipesRoot(): Promise<void> {
    try {
      ensureOwnRoot(this.fifoRoot);
    } catch (err) {
      const why = `the pipes' directory cannot be trusted: ${errorMessage(err)}`;
      this.fifoRootRefused = true;
      if (this.options.transport === 'fifo') throw new BackendError(`${why}; set BROKER_DOCKER_FIFO_DIR`);
      this.fifoOff(why);
      return;
    }
    await fs.promises.rm(this.fifoDir, { recursive: true, force: true }).catch(() => undefined);
    const onDisk = inMemoryFs(this.fifoRoot) === false;
    const hint = onDisk ? ': on a disk filesystem, where each pipe costs journal work; a tmpfs is cheaper (BROKER_DOCKER_FIFO_DIR, bench/README.md)' : '';
    logger.info({ fifoRoot: this.fifoRoot, reason: this.fifoRootReason }, `named pipes directory${hint}`);
  }

  async sweep(): Promise<number> {
    const stale = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_DEPLOYMENT}=${this.options.deployment}`] } });
    const mine = stale.filter((c) => c.Labels[LABEL_INSTANCE] !== this.instance);
    await Promise.all(mine.map((c) => this.forceRemove(c.Id)));
    return mine.length;
  }

  async startContainer(index: number): Promise<ContainerRef> {
    await this.retryRemovals();
    // A fresh name per start: a replacement never waits for a stuck removal to free the old one.
    const name = `bash-broker-${this.options.deployment}-${this.instance}-c${index}-${++this.starts}`.replace(/[^a-zA-Z0-9_.-]/g, '-');
    const spawner = await this.newSpawner(name);
    // One deadline over create and start: a stuck engine must not hold a start slot for good.
    const deadline = AbortSignal.timeout(this.options.startTimeoutMs);
    const failure = (err: unknown): BackendError =>
      new BackendError(
        deadline.aborted
          ? `container ${name} failed to start: the engine did not create and start it within ${this.options.startTimeoutMs / 1000} s (is dockerd stuck?)`
          : `container ${name} failed to start: ${errorMessage(err)}`,
      );
    let container: Dockerode.Container;
    try {
      container = await this.createContainer(name, spawner, deadline);
    } catch (err) {
      await spawner?.close();
      // A stuck engine may still create it once it moves again: remove it by name with the retries
      // (removeAbandoned).
      if (deadline.aborted) this.abandonedNames.set(name, null);
      throw failure(err);
    }
    try {
      await container.start({ abortSignal: deadline } as Dockerode.ContainerStartOptions);
    } catch (err) {
      await spawner?.close();
      // Past the deadline the engine is likely stuck: leave the removal to the retries, not this start.
      if (deadline.aborted) this.unremoved.add(container.id);
      else await this.forceRemove(container.id);
      throw failure(err);
    }
    const ref = { id: container.id, name };
    this.starting.set(container.id, { ref, container, spawner });
    return ref;
  }

  /**
   * Waits for the entrypoint to announce itself on the pipes (or falls back to docker exec) and opens
   * the control shell. Outside the pool's start bound: the next container's create and start need
   * not wait for this one's bash processes (the 1024-session warm-up is Docker's start rate).
   */
  async connectContainer(ref: ContainerRef): Promise<void> {
    const pending = this.starting.get(ref.id);
    if (!pending) throw new BackendError(`container ${ref.name} is not starting`);
    this.starting.delete(ref.id);
    const { container, spawner } = pending;
    try {
      const piped = await this.answeringSpawner(container, spawner);
      const openChannel = piped?.opener ?? execChannelOpener(container);
      const control = await ControlShell.open(container.id, openChannel);
      this.links.set(container.id, { control, openChannel, spawner: piped, pids: this.sessionPids(container.id) });
    } catch (err) {
      await spawner?.close();
      throw new BackendError(`container ${ref.name} failed to start: ${errorMessage(err)}`);
    }
  }

  /** Pipes for a new container, unless this engine does not share them (then null: docker exec). */
  private async newSpawner(name: string): Promise<FifoSpawner | null> {
    if (this.fifoState === 'off') return null;
    try {
      return await FifoSpawner.create(this.fifoDir, name, this.fifoStock);
    } catch (err) {
      if (this.options.transport === 'fifo') throw new BackendError(`cannot make pipes in ${this.fifoDir}: ${errorMessage(err)}`);
      this.fifoOff(`cannot make pipes in ${this.fifoDir}: ${errorMessage(err)}`);
      return null;
    }
  }

  /** The spawner once its entrypoint announced itself on the pipes; null (closed): use docker exec. */
  private async answeringSpawner(container: Dockerode.Container, spawner: FifoSpawner | null): Promise<FifoSpawner | null> {
    if (!spawner) return null;
    if (await spawner.ready(SPAWNER_READY_TIMEOUT_MS)) {
      this.fifoState = 'works';
      return spawner;
    }
    await spawner.close();
    const why = `the container's entrypoint did not answer on the pipes in ${this.fifoDir} within ${SPAWNER_READY_TIMEOUT_MS} ms`;
    if (this.options.transport === 'fifo') throw new BackendError(why);
    // Once pipes worked here, one silent container is that container's trouble, not the engine's.
    if (this.fifoState === 'unknown') this.fifoOff(why);
    else logger.warn({ container: container.id.slice(0, 12) }, `${why}: this container uses docker exec`);
    return null;
  }

  /** The container's per-session pids cgroups, or null (said once, with the reason). */
  private sessionPids(containerId: string): ContainerPids | null {
    const max = this.options.sessionPidsLimit;
    if (max <= 0) return null;
    const pids = ContainerPids.locate(this.pidsMount, containerId, max);
    if (!this.pidsLogged) {
      this.pidsLogged = true;
      if (typeof pids === 'string') logger.warn(`per-session pids limits are off: ${pids}; a fork bomb can take the forks of its container's other sessions`);
      else logger.info({ sessionPidsLimit: max, containerPidsLimit: this.options.pidsLimit }, 'per-session pids limits are on');
    }
    return typeof pids === 'string' ? null : pids;
  }

  private fifoOff(why: string): void {
    this.fifoState = 'off';
    logger.warn(
      { fifoDir: this.fifoDir },
      `${why}: sessions use docker exec (slower to open). A local engine and a broker on its host (or with the directory mounted at the same path) use pipes`,
    );
  }

  private createContainer(name: string, spawner: FifoSpawner | null, abortSignal: AbortSignal): Promise<Dockerode.Container> {
    const options: Dockerode.ContainerCreateOptions & { abortSignal: AbortSignal } = {
      abortSignal,
      name,
      Image: this.options.image,
      // Only bash is required of the image. Its entrypoint spawns shells on the broker's pipes, or
      // (without them) idles reading a stdin that stays open.
      Entrypoint: ['bash', '-c', SPAWNER_SCRIPT],
      Cmd: [],
      OpenStdin: true,
      Tty: false,
      Labels: { [LABEL_DEPLOYMENT]: this.options.deployment, [LABEL_INSTANCE]: this.instance },
      HostConfig: {
        Init: true, // reaps killed orphans; without it they stay zombies (FINDINGS)
        NanoCpus: Math.round(this.options.cpus * 1e9),
        Memory: this.options.memoryBytes,
        PidsLimit: this.options.pidsLimit,
        NetworkMode: this.options.networkMode,
        Binds: spawner ? [spawner.bind] : undefined,
        Mounts: this.options.tmpBytes > 0 ? [tmpVolume(this.options.tmpBytes, this.options.deployment)] : undefined,
      },
    };
    return this.docker.createContainer(options);
  }

  async removeContainer(ref: ContainerRef): Promise<void> {
    const link = this.links.get(ref.id);
    this.links.delete(ref.id);
    const pending = this.starting.get(ref.id);
    this.starting.delete(ref.id);
    await pending?.spawner?.close();
    this.unremovedDirs.delete(ref.id);
    await link?.control.close().catch(() => undefined);
    await this.forceRemove(ref.id);
    await link?.spawner?.close();
  }

  async checkContainer(ref: ContainerRef): Promise<ContainerHealth> {
    // Removals that failed (the engine was down) are retried before each container start, but a pool
    // whose replacements all started leaves them waiting for the next start: retry with the checks too.
    if (this.unremoved.size + this.abandonedNames.size > 0 && !this.removalsRetrying) {
      this.removalsRetrying = true;
      void this.retryRemovals().finally(() => (this.removalsRetrying = false));
    }
    const deadline = AbortSignal.timeout(INSPECT_TIMEOUT_MS);
    let state: Dockerode.ContainerInspectInfo['State'] | null = null;
    try {
      state = (await this.docker.getContainer(ref.id).inspect({ abortSignal: deadline })).State;
    } catch (err) {
      if (!deadline.aborted) return { healthy: false, reason: `inspect failed: ${errorMessage(err)}` };
      logger.warn({ container: ref.name }, `the engine did not answer an inspect within ${INSPECT_TIMEOUT_MS / 1000} s: checking the container's control lane alone`);
    }
    // A command killed by the memory limit sets OOMKilled while the container still runs; only a
    // container that stopped is lost (its sessions' own leases learn of their kill separately).
    // OOMKilled stays set once any process in the container was OOM-killed, so it is only a hint.
    if (state && !state.Running) {
      const hint = state.OOMKilled ? '; a process in it was OOM-killed' : '';
      return { healthy: false, reason: `container is ${state.Status} (exit code ${state.ExitCode}${hint})` };
    }
    if (state?.Paused) return { healthy: false, reason: 'container is paused' };
    const control = this.links.get(ref.id)?.control;
    if (!control?.alive) return { healthy: false, reason: state ? 'control shell is gone' : 'control shell is gone (and the engine does not answer)' };
    try {
      await control.ping(this.options.pingTimeoutMs);
    } catch {
      // The engine says it runs (or says nothing): a missed ping alone is a starved container (a busy
      // host, a kill scanning a fork burst ahead of the ping), not a dead one, until the lane is
      // silent this long.
      const silentMs = control.silentForMs;
      if (silentMs < this.options.stallTimeoutMs) {
        logger.warn({ container: ref.name, silentMs }, `container missed a ping (${this.options.pingTimeoutMs} ms): slow, not replaced yet`);
        return { healthy: true };
      }
      return { healthy: false, reason: `container did not answer for ${Math.round(silentMs / 1000)} s (pings time out after ${this.options.pingTimeoutMs} ms)` };
    }
    return { healthy: true };
  }

  async openShell(ref: ContainerRef, options: OpenShellOptions): Promise<ShellProcess> {
    if (options.pty) throw new BadRequestError('the docker backend does not open PTY sessions yet');
    const link = this.links.get(ref.id);
    if (!link?.control.alive) throw new BackendError(`container ${ref.name} has no control shell`);
    const tag = `BROKER_SESSION_TAG=${this.instance}-${options.slotId}-${++this.generation}`;
    const shell = await DockerShell.open({ openChannel: link.openChannel, containerId: ref.id, control: link.control, env: [tag, 'TERM=dumb'], tag });
    if (link.pids) {
      // Before the lease's first command: bash has started nothing yet, so all it starts is capped.
      // A shell that could not be moved still works, sharing the container's limit: say so, go on.
      await link.pids.confine(shell.containerPid, `bkr-${options.slotId}`.replace(/[^A-Za-z0-9_.-]/g, '-')).catch((err: unknown) => {
        logger.warn({ container: ref.name, slot: options.slotId, err: errorMessage(err) }, 'could not give the session its own pids limit');
      });
    }
    return shell;
  }

  /**
   * One tar upload (putArchive) creates the directory and every file, parents included. Without
   * files a `mkdir` on the control shell's fs lane does (~1 ms against ~60 ms of dockerd work for an
   * upload); when that lane cannot (the container is at its pids limit, the lane is stuck or cannot
   * be opened) the upload of an empty directory does it, which needs no process in the container.
   */
  async prepareWorkdir(ref: ContainerRef, dir: string, files: readonly WorkdirFile[]): Promise<void> {
    if (!WORKDIR.test(dir)) throw new BackendError(`refusing to create ${dir}`);
    const control = this.links.get(ref.id)?.control;
    if (files.length === 0 && control?.alive) {
      try {
        await control.makeDir(dir, MKDIR_TIMEOUT_MS);
        return;
      } catch (err) {
        logger.debug({ container: ref.name, err: errorMessage(err) }, 'mkdir on the fs lane failed: uploading the directory instead');
      }
    }
    const pack = tar.pack();
    const root = dir.replace(/^\/+|\/+$/g, '');
    const dirs = new Set<string>([root]);
    for (const f of files) {
      const parts = f.path.split('/');
      for (let i = 1; i < parts.length; i++) dirs.add(`${root}/${parts.slice(0, i).join('/')}`);
    }
    for (const d of [...dirs].sort()) pack.entry({ name: `${d}/`, type: 'directory', mode: 0o755 });
    for (const f of files) pack.entry({ name: `${root}/${f.path}`, mode: 0o644 }, f.content);
    pack.finalize();
    const tarball = await streamToBuffer(pack);
    try {
      await this.docker.getContainer(ref.id).putArchive(tarball, { path: '/' });
    } catch (err) {
      throw new BackendError(`could not write files into ${ref.name}: ${errorMessage(err)}`);
    }
  }

  /**
   * `rm -rf` on the fs lane, with the directories of earlier removals that failed in this container
   * (the pool does not hand a failed directory back). While the container is at its pids limit the
   * removal waits (the slot stays CLEANING) and retries; past RM_TIMEOUT_MS it fails with a
   * BackendError (the slot goes BROKEN and is rebuilt with backoff) and the directory is kept for
   * the next removal in the container.
   */
  async removeWorkdir(ref: ContainerRef, dir: string): Promise<void> {
    const control = this.links.get(ref.id)?.control;
    if (!control) return; // the container is being replaced: its files go with it
    if (!WORKDIR.test(dir)) throw new BackendError(`refusing to remove ${dir}`);
    let pending = this.unremovedDirs.get(ref.id);
    if (!pending) this.unremovedDirs.set(ref.id, (pending = new Set()));
    pending.add(dir);
    const deadline = Date.now() + RM_TIMEOUT_MS;
    for (;;) {
      const dirs = [...pending];
      try {
        await control.removeDirs(dirs, Math.max(1, deadline - Date.now()));
        for (const d of dirs) pending.delete(d);
        return;
      } catch (err) {
        if (!(err instanceof PidsLimitError) || Date.now() + ROOM_POLL_MS >= deadline || !control.alive) throw err;
        await new Promise((resolve) => setTimeout(resolve, ROOM_POLL_MS).unref());
      }
    }
  }

  async close(): Promise<void> {
    // Started but never connected (the pool closed meanwhile): nobody else knows these.
    await Promise.all([...this.starting.values()].map((s) => this.removeContainer(s.ref)));
    const links = [...this.links.values()];
    this.links.clear();
    await Promise.all(links.map((l) => l.control.close().catch(() => undefined)));
    await Promise.all(links.map((l) => l.spawner?.close()));
    if (!this.fifoRootRefused) {
      await this.fifoStock.close();
      await fs.promises.rmdir(this.fifoDir).catch(() => undefined); // only if empty: another broker's may be there
    }
    // Bounded: an engine that is still down must not hold the broker's shutdown.
    await Promise.race([this.retryRemovals(), new Promise((r) => setTimeout(r, 10_000).unref())]);
  }

  private async retryRemovals(): Promise<void> {
    const byId = [...this.unremoved].map((id) => this.forceRemove(id));
    const byName = [...this.abandonedNames.keys()].map((name) => this.removeAbandoned(name));
    await Promise.all([...byId, ...byName]);
  }

  /** Gone (or 404) drops it from `unremoved`; any other outcome keeps it there for a retry. */
  private async forceRemove(id: string): Promise<void> {
    try {
      await this.removeCall(id);
      this.unremoved.delete(id);
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      // 409: a removal already in progress; a retry then finds it gone (404), or finishes it.
      if (status === 404) this.unremoved.delete(id);
      else this.unremoved.add(id);
      if (status !== 404 && status !== 409) logger.warn({ id, err: errorMessage(err) }, 'container removal failed');
    }
  }

  /** Removes a container by the name of a create abandoned at its deadline (abandonedNames). */
  private async removeAbandoned(name: string): Promise<void> {
    try {
      await this.removeCall(name);
      this.abandonedNames.delete(name);
      logger.info({ container: name }, 'removed a container the engine created after its start was abandoned');
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) return; // the engine did not answer: later
      const firstMissing = this.abandonedNames.get(name) ?? Date.now();
      if (Date.now() - firstMissing >= ABANDONED_NAME_GRACE_MS) this.abandonedNames.delete(name);
      else this.abandonedNames.set(name, firstMissing);
    }
  }

  /** One forced removal (volumes too) by id or name, given up after REMOVE_CALL_TIMEOUT_MS. */
  private removeCall(idOrName: string): Promise<unknown> {
    return this.docker.getContainer(idOrName).remove({ force: true, v: true, abortSignal: AbortSignal.timeout(REMOVE_CALL_TIMEOUT_MS) });
  }
}

/**
 * /tmp (the working directories) on a tmpfs of its own size, so a disk filler gets ENOSPC there
 * instead of filling the engine's disk. An anonymous volume of the local driver rather than
 * HostConfig.Tmpfs: putArchive (files on acquire) cannot write into a container's tmpfs mounts,
 * but does into its volumes. Removed with the container (`v: true`).
 */
function tmpVolume(sizeBytes: number, deployment: string): Dockerode.MountSettings {
  return {
    Type: 'volume',
    Source: '', // anonymous: one per container, removed with it
    Target: '/tmp',
    VolumeOptions: {
      NoCopy: true,
      Labels: { [LABEL_DEPLOYMENT]: deployment },
      DriverConfig: { Name: 'local', Options: { type: 'tmpfs', device: 'tmpfs', o: `size=${sizeBytes},mode=1777` } },
    },
  };
}

function streamToBuffer(stream: tar.Pack): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}
