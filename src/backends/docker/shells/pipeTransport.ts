/**
 * The choice of transport for a Docker backend's shells: named pipes the container's entrypoint
 * spawns shells on (fifoSpawner.ts), where the broker shares a filesystem with the engine, else one
 * `docker exec` per shell. Owns the pipes' host directory and the stock of pipes made in advance.
 */
import type Dockerode from 'dockerode';
import fs from 'node:fs';
import path from 'node:path';
import type { BrokerConfig } from '../../../config/config';
import { BackendError, errorMessage } from '../../../common/errors';
import { logger } from '../../../common/logger';
import { FifoSpawner } from './fifoSpawner';
import { FifoStock } from './fifoStock';
import { defaultFifoRoot, ensureOwnRoot, inMemoryFs } from './fifoRoot';
import { buildSessionInit } from '../isolation/sessionInitBuild';

/** How long a started container's entrypoint has to announce itself on the pipes. */
const SPAWNER_READY_TIMEOUT_MS = 15_000;

export type PipeOptions = Pick<BrokerConfig['docker'], 'transport' | 'fifoRoot' | 'deployment'> & Partial<Pick<BrokerConfig['docker'], 'isolation'>>;

export class PipeTransport {
  /**
   * Whether pipes work with this engine: unknown until the first container tells. Once they failed
   * before ever working (a remote engine, a broker in a container without the shared directory),
   * later containers go straight to docker exec instead of waiting for an announcement each.
   */
  private state: 'unknown' | 'works' | 'off';
  /** Host directory of every deployment's pipes: the configured one, or the default chosen for this host. */
  private readonly root: string;
  private readonly rootReason: string;
  /** The root failed ensureOwnRoot: nothing under it is made or removed. */
  private rootRefused = false;
  /** Makes the named pipes of every container; in the deployment's pipe directory. */
  private readonly stock: FifoStock;
  /** With isolation: the session init every container gets (isolation/sessionInitBuild.ts), or null. */
  private sessionInit: string | null = null;

  constructor(
    private readonly options: PipeOptions,
    instance: string,
  ) {
    this.state = options.transport === 'exec' ? 'off' : 'unknown';
    const chosen = options.fifoRoot === null ? defaultFifoRoot() : { root: options.fifoRoot, reason: 'BROKER_DOCKER_FIFO_DIR' };
    this.root = chosen.root;
    this.rootReason = chosen.reason;
    this.stock = new FifoStock(path.join(this.dir, `.stock-${instance}`));
  }

  /** Host directory of this deployment's snapshot layers (snapshots/dockerSnapshotLayers.ts), beside its pipes. */
  get snapshotsDir(): string {
    return path.join(this.root, `${this.options.deployment}.snapshots`);
  }

  /** Host directory of this deployment's pipes (one subdirectory per container). */
  private get dir(): string {
    return path.join(this.root, this.options.deployment);
  }

  /**
   * At init: checks the pipes' root is safe (without one, pipes are off), then clears this
   * deployment's old pipes (its containers are gone). In that order: a root someone else controls
   * (a link, say) is never removed through.
   */
  async prepare(): Promise<void> {
    if (this.options.transport === 'exec') return;
    try {
      ensureOwnRoot(this.root);
    } catch (err) {
      const why = `the pipes' directory cannot be trusted: ${errorMessage(err)}`;
      this.rootRefused = true;
      if (this.options.transport === 'fifo') throw new BackendError(`${why}; set BROKER_DOCKER_FIFO_DIR`);
      this.off(why);
      return;
    }
    await fs.promises.rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
    const onDisk = inMemoryFs(this.root) === false;
    const hint = onDisk ? ': on a disk filesystem, where each pipe costs journal work; a tmpfs is cheaper (BROKER_DOCKER_FIFO_DIR, bench/analysis.md)' : '';
    logger.info({ fifoRoot: this.root, reason: this.rootReason }, `named pipes directory${hint}`);
    if (this.options.isolation?.enabled) {
      const init = await buildSessionInit(this.root);
      this.sessionInit = init.path;
      if (init.path !== null) logger.info({ sessionInit: init.path, built: init.built }, 'isolated sessions start through the session init');
      else logger.warn({ reason: init.why }, 'no session init: isolated sessions start through the setup script (the same isolation, about 7 ms more CPU per session)');
    }
  }

  /** Pipes for a new container, unless this engine does not share them (then null: docker exec). */
  async newSpawner(name: string): Promise<FifoSpawner | null> {
    if (this.state === 'off') return null;
    try {
      return await FifoSpawner.create(this.dir, name, this.stock, this.sessionInit);
    } catch (err) {
      if (this.options.transport === 'fifo') throw new BackendError(`cannot make pipes in ${this.dir}: ${errorMessage(err)}`);
      this.off(`cannot make pipes in ${this.dir}: ${errorMessage(err)}`);
      return null;
    }
  }

  /** The spawner once its entrypoint announced itself on the pipes; null (closed): use docker exec. */
  async answering(container: Dockerode.Container, spawner: FifoSpawner | null): Promise<FifoSpawner | null> {
    if (!spawner) return null;
    if (await spawner.ready(SPAWNER_READY_TIMEOUT_MS)) {
      this.state = 'works';
      return spawner;
    }
    await spawner.close();
    const why = `the container's entrypoint did not answer on the pipes in ${this.dir} within ${SPAWNER_READY_TIMEOUT_MS} ms`;
    if (this.options.transport === 'fifo') throw new BackendError(why);
    // Once pipes worked here, one silent container is that container's trouble, not the engine's.
    if (this.state === 'unknown') this.off(why);
    else logger.warn({ container: container.id.slice(0, 12) }, `${why}: this container uses docker exec`);
    return null;
  }

  /** At close: the stock, and the deployment's directory if empty (another broker's may be there). */
  async close(): Promise<void> {
    if (this.rootRefused) return;
    await this.stock.close();
    await fs.promises.rmdir(this.dir).catch(() => undefined);
  }

  private off(why: string): void {
    this.state = 'off';
    logger.warn(
      { fifoDir: this.dir },
      `${why}: sessions use docker exec (slower to open). A local engine and a broker on its host (or with the directory mounted at the same path) use pipes`,
    );
  }
}
