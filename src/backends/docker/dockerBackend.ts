/**
 * The Docker backend: C containers from BROKER_IMAGE, S long-lived bash sessions in each, plus one
 * control shell per container for signals, cleanup and health pings. Each bash reaches the broker
 * over a channel (channel.ts): pipes the container's entrypoint spawns it on (pipeTransport.ts,
 * fifoSpawner.ts: no dockerd work per shell) when the broker shares a filesystem with the engine,
 * else a `docker exec`. Containers carry labels naming the deployment and the broker instance, so a
 * later start sweeps what a crash left.
 *
 * This file is the container lifecycle (start, connect, open shells, remove); the rest is in
 * containerStart.ts (create and start under a deadline), containerSpec.ts (create options),
 * containerRemovals.ts (removals retried), containerHealth.ts (health checks), workdirs.ts (dirs).
 */
import type Dockerode from 'dockerode';
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { ContainerHealth, ContainerRef, EngineImages, OpenShellOptions, Terminals, SessionBackend, ShellProcess, TerminalOptions, TerminalProcess, WorkdirFile } from '../../core/ports/backend';
import type { ContainerStarts } from '../../core/ports/containers';
import { dockerContainerStarts, engineImages, type DockerCapabilitySettings } from './dockerCapabilities';
import { BackendError, BadRequestError, NotSupportedError, errorMessage } from '../../common/errors';
import { logger } from '../../common/logger';
import { ControlShell } from './control/controlShell';
import type { BrokerConfig } from '../../config/config';
import { DockerShell } from './shells/dockerShell';
import { openWhenRoom } from './shells/openWhenRoom';
import { execChannelOpener } from './shells/channel';
import type { ContainerLink } from './containers/containerLink';
import { ContainerCgroups } from './cgroups/containerCgroups';
import { containerCreateOptions } from './containers/containerSpec';
import { containerName, LABEL_DEPLOYMENT, LABEL_INSTANCE } from './containers/labels';
import type { DedicatedContainerSpec } from '../../core/ports/containers';
import { DockerDedicatedContainers } from './containers/dedicatedContainers';
import { dockerEngine } from './containers/engine';
import { ContainerRemovals } from './containers/containerRemovals';
import { ContainerLedger } from './containers/containerLedger';
import { ContainerPauses } from './containers/containerPauses';
import { checkContainerHealth } from './containers/containerHealth';
import { DockerWorkdirs } from './files/workdirs';
import { PipeTransport } from './shells/pipeTransport';
import { SPAWNER_SCRIPT } from './shells/fifoSpawner';
import { startContainerNamed, type StartedContainer } from './containers/containerStart';
import { openDockerTerminal } from './terminals/dockerTerminal';
import { openFifoTerminal } from './terminals/fifoTerminal';
import { DockerFiles } from './files/dockerFiles';
import { DockerMeter } from './cgroups/dockerMeter';
import { SessionIsolation } from './isolation/sessionIsolation';
import { DockerSnapshotLayers, withSnapshotStore } from './snapshots/dockerSnapshotLayers';
import { SessionNetworks } from './isolation/sessionNetwork';
import type { SessionNetworkControl } from '../../core/ports/sessionNetworks';

export { LABEL_DEPLOYMENT, LABEL_INSTANCE };

/** Resolved and validated in dockerConfig.ts (BROKER_IMAGE, BROKER_CONTAINER_*, BROKER_NETWORK_MODE, ...); a group's and a task's settings make those capabilities. */
export type DockerBackendOptions = BrokerConfig['docker'] &
  DockerCapabilitySettings & {
    env?: Readonly<Record<string, string>>;
    /** Each container holds one session and is replaced after its lease (a pool of whole containers, `fresh_container`). */
    wholeContainers?: boolean;
  };

/**
 * How long close waits for the starts and connects still running. A start that ends later is
 * removed as it ends (the ledger refuses it); only a broker that exits first leaves it, for the next
 * broker's sweep. Not the start bound (120 s by default): a stuck engine must not hold shutdown.
 */
const CLOSE_SETTLE_MS = 15_000;

export class DockerBackend implements SessionBackend {
  readonly kind = 'docker';
  readonly docker: Dockerode = dockerEngine();
  /** An isolated session's file routes run in its own view (isolation/sessionView.ts). */
  readonly files = new DockerFiles(this.docker, (ref, workdir) => (this.links.get(ref.id)?.isolates ? this.isolation.viewOf(ref.id, workdir) : null));
  readonly meter = new DockerMeter(this.docker);
  readonly instance = `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private readonly links = new Map<string, ContainerLink>();
  /** Containers where a terminal on pipes did not start (no util-linux `script`): theirs use docker exec. */
  private readonly noScript = new Set<string>();
  private readonly starting = new Map<string, StartedContainer>();
  private readonly ledger = new ContainerLedger();
  private readonly removals: ContainerRemovals;
  /** Containers of their own on this deployment (the lifecycle's here; the groups' and tasks' share it). */
  readonly ownContainers: DockerDedicatedContainers;
  readonly terminals: Terminals = { open: (ref, options) => this.openTerminal(ref, options) };
  readonly pausing = new ContainerPauses(this.docker);
  private readonly workdirs: DockerWorkdirs;
  private readonly pipes: PipeTransport;
  private generation = 0;
  private starts = 0;
  /** Each session's cgroups: pids, CPU and memory (cgroups/containerCgroups.ts). */
  private readonly cgroups: ContainerCgroups;
  /** Which containers isolate their sessions, and each isolated session's shell (for its extra shells). */
  readonly isolation: SessionIsolation;
  readonly snapshots: DockerSnapshotLayers | undefined; // isolated sessions' snapshot layers; none without isolation
  /** Every container it starts: a pool's, a lifecycle sandbox's, and a group's and a task's where their settings were given. */
  readonly containers: ContainerStarts;
  /** An image's pool backend is one of these with that image: it serves shells alone (no groups, no tasks). */
  readonly images: EngineImages = engineImages(this.docker, (image, deployment) => new DockerBackend({ ...this.options, groupImage: undefined, tasks: undefined, image, deployment }));
  /** Each session's network namespace and egress policy (isolation/sessionNet.c, sessionNetwork.ts). */
  private readonly nets: SessionNetworks;
  readonly networks: SessionNetworkControl = {
    change: (ref, slotId, policy, rules) => this.nets.change(ref, this.isolation.shellOf(ref.id, slotId), policy, rules),
    current: (ref, slotId) => this.nets.current(ref, this.isolation.shellOf(ref.id, slotId)),
    status: () => this.nets.status(),
  };

  constructor(private readonly options: DockerBackendOptions) {
    this.removals = new ContainerRemovals(this.docker);
    this.ownContainers = new DockerDedicatedContainers(this.docker, this.removals, options, this.instance);
    const own = { pool: (index: number) => this.startPool(index), lifecycle: (spec: DedicatedContainerSpec) => this.startDedicated(spec), serveShells: this.serveShells.bind(this) };
    this.containers = dockerContainerStarts({ docker: this.docker, ownContainers: this.ownContainers, instance: this.instance, options, ...own });
    this.workdirs = new DockerWorkdirs(this.docker, (id) => this.links.get(id)?.control);
    this.pipes = new PipeTransport(options, this.instance);
    this.cgroups = new ContainerCgroups(options);
    this.nets = new SessionNetworks(options.isolation.enabled ? options.isolation.network : 'shared', this.docker, options.wholeContainers === true, options.isolation.egressDns);
    this.isolation = new SessionIsolation(options.isolation, () => this.nets.status(), () => this.cgroups.limitsReport());
    this.snapshots = options.isolation.enabled ? new DockerSnapshotLayers(this.pipes.snapshotsDir) : undefined;
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
    await this.pipes.prepare();
    await this.snapshots?.init();
  }

  /** The pool's containers and the lifecycle's an earlier broker of this deployment left. */
  async sweep(): Promise<number> {
    return (await this.ownContainers.sweep('pool')) + (await this.ownContainers.sweep('lifecycle'));
  }

  private async startPool(index: number): Promise<ContainerRef> {
    // A fresh name per start: a replacement never waits for a stuck removal to free the old one.
    const name = containerName(this.options.deployment, this.instance, `c${index}`, `${++this.starts}`);
    return this.startNamed(name, (bind, deadline) => withSnapshotStore(containerCreateOptions(name, this.options, this.instance, bind, deadline), this.snapshots?.bind ?? null));
  }

  /**
   * A lifecycle sandbox's own container (containers/dedicatedContainers.ts), started and connected:
   * the broker's spawner stays its entrypoint (it serves the shells execd runs) and the sandbox's own
   * entry process runs beside it, its output in the container's log, its stdin closed. The container
   * outlives that process: the sandbox ends when it is deleted or expires, not when that exits.
   */
  private async startDedicated(spec: DedicatedContainerSpec): Promise<ContainerRef> {
    try {
      await this.docker.getImage(spec.image).inspect();
    } catch {
      throw new BadRequestError(`image '${spec.image}' is not on the engine and no warm pool serves it (the broker never pulls: build or load it first)`);
    }
    const spawner = await this.pipes.newSpawner(this.ownContainers.nameOf(spec));
    const served: DedicatedContainerSpec = {
      ...spec,
      entrypoint: ['bash', '-c', `"$@" </dev/null &\n${SPAWNER_SCRIPT}`, 'sandbox-entrypoint', ...(spec.entrypoint ?? [])],
      limits: { ...spec.limits, tmpBytes: this.options.tmpBytes },
    };
    const { ref } = await this.ledger.track(
      this.ownContainers.start(served, { binds: spawner ? [spawner.bind] : [], openStdin: true }, async () => {
        await spawner?.close();
      }),
    );
    this.starting.set(ref.id, { ref, container: this.docker.getContainer(ref.id), spawner });
    await this.ledger.keepOrRemove(ref, 'started', (r) => this.removeContainer(r));
    try {
      await this.connectContainer(ref);
    } catch (err) {
      await this.removeContainer(ref).catch(() => undefined);
      throw err;
    }
    return ref;
  }

  private async startNamed(name: string, createOptions: (bind: string | null, deadline: AbortSignal) => Dockerode.ContainerCreateOptions): Promise<ContainerRef> {
    const started = await this.ledger.track(startContainerNamed({ docker: this.docker, removals: this.removals, pipes: this.pipes, startTimeoutMs: this.options.startTimeoutMs }, name, createOptions));
    this.starting.set(started.ref.id, started);
    await this.ledger.keepOrRemove(started.ref, 'started', (r) => this.removeContainer(r));
    return started.ref;
  }

  /** The container's IP on its first network with one (bridge and user networks), or null (none). */
  async containerAddress(ref: ContainerRef): Promise<string | null> {
    const info = await this.docker.getContainer(ref.id).inspect();
    const ips = Object.values(info.NetworkSettings?.Networks ?? {}).map((n) => n.IPAddress).filter((ip) => !!ip);
    return ips[0] ?? null;
  }

  /**
   * Waits for the entrypoint to announce itself on the pipes (or falls back to docker exec) and opens
   * the control shell. Outside the pool's start bound: the next container's create and start need
   * not wait for this one's bash processes (the 1024-session warm-up is Docker's start rate).
   */
  async connectContainer(ref: ContainerRef): Promise<void> {
    await this.ledger.track(this.connect(ref));
    await this.ledger.keepOrRemove(ref, 'connected', (r) => this.removeContainer(r));
  }

  private async connect(ref: ContainerRef): Promise<void> {
    const pending = this.starting.get(ref.id);
    if (!pending) throw new BackendError(`container ${ref.name} is not starting`);
    this.starting.delete(ref.id);
    const { container, spawner } = pending;
    try {
      const piped = await this.pipes.answering(container, spawner);
      const openChannel = piped?.opener ?? execChannelOpener(container);
      const control = await ControlShell.open(container.id, openChannel);
      const isolates = this.isolation.check(ref, piped);
      if (isolates) await this.nets.connect(ref, piped);
      this.links.set(container.id, { control, openChannel, spawner: piped, pids: this.cgroups.pids(container.id), usage: this.cgroups.usage(container.id), isolates });
      await this.workdirs.learnHostRoot(ref);
    } catch (err) {
      await spawner?.close();
      throw new BackendError(`container ${ref.name} failed to start: ${errorMessage(err)}`);
    }
  }

  /**
   * A group member's or a task's container (its helper's) serves execd's shells, files and metrics as
   * a pool's, over docker exec (its entry process is its own, not the spawner): no isolation, no cgroups.
   */
  private serveShells(ref: ContainerRef, control: ControlShell, reopen?: () => Promise<ControlShell>): () => void {
    const link: ContainerLink = { control, openChannel: execChannelOpener(this.docker.getContainer(ref.id)), spawner: null, pids: null, usage: null, isolates: false, reopen };
    this.links.set(ref.id, link);
    return () => {
      if (this.links.get(ref.id) === link) this.links.delete(ref.id);
      this.meter.forget(ref.id);
    };
  }

  async removeContainer(ref: ContainerRef): Promise<void> {
    this.ledger.removed(ref.id);
    this.pausing.forget(ref.id);
    const link = this.links.get(ref.id);
    this.links.delete(ref.id);
    this.noScript.delete(ref.id);
    this.isolation.forget(ref.id);
    this.nets.forget(ref.id);
    const pending = this.starting.get(ref.id);
    this.starting.delete(ref.id);
    await pending?.spawner?.close();
    this.workdirs.forget(ref.id);
    this.meter.forget(ref.id);
    await link?.control.close().catch(() => undefined);
    await this.removals.forceRemove(ref.id);
    await link?.spawner?.close();
  }

  async checkContainer(ref: ContainerRef): Promise<ContainerHealth> {
    // Paused on purpose (a lifecycle pause): neither its pings nor the engine's Paused are a failure.
    if (this.pausing.has(ref.id)) return { healthy: true };
    // Removals that failed (the engine was down) are retried before each container start, but a pool
    // whose replacements all started leaves them waiting for the next start: retry with the checks too.
    this.removals.retryInBackground();
    return checkContainerHealth(this.docker, ref, () => this.links.get(ref.id)?.control, this.options);
  }

  async openShell(ref: ContainerRef, options: OpenShellOptions): Promise<ShellProcess> {
    if (options.pty) throw new NotSupportedError('the docker backend does not open PTY sessions yet');
    const link = this.links.get(ref.id);
    if (link?.reopen && !link.control.alive) link.control = await link.reopen().catch(() => link.control);
    if (!link?.control.alive) throw new BackendError(`container ${ref.name} has no control shell`);
    const tag = `BROKER_SESSION_TAG=${this.instance}-${options.slotId}-${++this.generation}`;
    const isolated = link.isolates ? { ...this.isolation.request(ref.id, options), network: this.nets.modeOf(ref.id) } : undefined;
    const shell = await openWhenRoom(link.control, () => DockerShell.open({ openChannel: link.openChannel, containerId: ref.id, control: link.control, env: [tag, 'TERM=dumb'], tag, isolated, rewound: this.isolation.rewound }));
    if (isolated) this.isolation.opened(ref.id, options, shell);
    if (link.pids) {
      // Before the lease's first command: bash has started nothing yet, so all it starts is capped.
      // A shell that could not be moved still works, sharing the container's limit: say so, go on.
      // Confined, its kills are decided and done from this host (DockerShell.killForRecycle).
      const name = `bkr-${options.slotId}`.replace(/[^A-Za-z0-9_.-]/g, '-');
      await link.pids.confine(shell.containerPid, name, shell.isolated).then(
        async (cgroup) => {
          shell.useCgroup(cgroup);
          // Its commands' CPU, memory and OOM figures (termination facts); unknown (null) if this fails.
          const counters = await link.usage?.confine(cgroup.shellHostPid, name).catch(() => null);
          if (counters) shell.useCounters(counters);
        },
        (err: unknown) => {
          logger.warn({ container: ref.name, slot: options.slotId, err: errorMessage(err) }, 'could not give the session its own pids limit');
        },
      );
    }
    return shell;
  }

  /**
   * A workspace's terminal in the slot's container: on the broker's pipes (fifoTerminal.ts), opened
   * by the session init where the container's sessions start through it, else through `script`
   * where the container has it; else a `docker exec` with a TTY (dockerTerminal.ts). In a container
   * that isolates its sessions it opens in the view of the slot's session (the workspace's), never
   * in the container's own.
   */
  private async openTerminal(ref: ContainerRef, options: TerminalOptions): Promise<TerminalProcess> {
    const link = this.links.get(ref.id);
    if (!link?.control.alive) throw new BackendError(`container ${ref.name} has no control shell`);
    const isolated = link.isolates ? this.isolation.terminal(ref.id, options.slotId) : undefined;
    if (isolated === null) throw new BackendError(`the session of slot ${options.slotId} is gone: its terminal has no filesystem view to open in`);
    const tag = (): string => `BROKER_SESSION_TAG=${this.instance}-${options.slotId}-t${++this.generation}`;
    const byInit = isolated !== undefined && link.spawner?.opensTerminals === true;
    if (link.spawner && (byInit || !this.noScript.has(ref.id))) {
      try {
        return await openFifoTerminal(link.openChannel, link.control, options, tag(), isolated, byInit);
      } catch (err) {
        // No `script`, or one that is not util-linux's: this container's terminals take the engine's path.
        if (!byInit) this.noScript.add(ref.id);
        logger.warn({ container: ref.name, err: errorMessage(err) }, 'a terminal on pipes did not start: workspace terminals of this container go through docker exec');
      }
    }
    return openDockerTerminal(this.docker.getContainer(ref.id), link.control, options, tag(), isolated);
  }

  prepareWorkdir(ref: ContainerRef, dir: string, files: readonly WorkdirFile[]): Promise<void> {
    return this.workdirs.prepare(ref, dir, files);
  }

  removeWorkdir(ref: ContainerRef, dir: string): Promise<void> {
    return this.workdirs.remove(ref, dir);
  }

  workdirGone(ref: ContainerRef, dir: string): boolean {
    return this.workdirs.gone(ref, dir);
  }

  /** Commands run on the container's fs lane (workdir creations and removals, merged): for tests and the bench. */
  fsLaneCommands(ref: ContainerRef): number {
    return this.workdirs.fsCommands(ref.id);
  }

  async close(): Promise<void> {
    // Starts and connects still running end first (bounded: a stuck engine must not hold shutdown);
    // then every container not removed yet goes, whether the pool knew it or not.
    await this.ledger.settle(CLOSE_SETTLE_MS);
    await Promise.all(this.ledger.left().map((ref) => this.removeContainer(ref).catch(() => undefined)));
    const links = [...this.links.values()];
    this.links.clear();
    await Promise.all(links.map((l) => l.control.close().catch(() => undefined)));
    await Promise.all(links.map((l) => l.spawner?.close()));
    await this.pipes.close();
    await this.snapshots?.close();
    // Bounded: an engine that is still down must not hold the broker's shutdown. Last, whatever of this broker the engine still has.
    await Promise.race([this.removals.retry().then(() => this.ownContainers.removeOwn()).catch(() => 0), new Promise((r) => setTimeout(r, 10_000).unref())]);
  }
}
