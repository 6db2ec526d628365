/**
 * Lifecycle sandboxes of an image no warm pool serves: each a container of its own from the backend
 * (with the create's limits, env and entrypoint), at most BROKER_SANDBOX_MAX_DEDICATED at once. No
 * pool watches them, so their health is checked here too.
 */
import { sessionWorkdir, type ContainerRef, type SessionBackend } from '../ports/backend';
import type { PoolRegistry } from '../pool/poolRegistry';
import { SandboxRecord, type SandboxSpec } from './sandboxRecord';
import { BadRequestError, BrokerError, NotImplementedError } from '../../common/errors';

export interface DedicatedOptions {
  pools: PoolRegistry;
  backend: SessionBackend;
  maxDedicated: number;
}

export class DedicatedSandboxes {
  /** Started or starting, not yet removed: what counts against the maximum. */
  private count = 0;

  constructor(private readonly options: DedicatedOptions) {}

  get size(): number {
    return this.count;
  }

  /** A Running sandbox in a container of its own, or the 400/503 that says why not. */
  async start(id: string, spec: SandboxSpec): Promise<SandboxRecord> {
    const { backend, maxDedicated, pools } = this.options;
    const served = pools.entries.filter((e) => pools.wholeContainersOf(e.image) === e).map((e) => `'${e.image}'`);
    const warm = served.length > 0 ? `warm pools serve ${served.join(', ')}` : 'no warm pool of whole containers is configured (BROKER_POOLS)';
    if (!backend.containers.kinds.has('lifecycle')) throw new BadRequestError(`image '${spec.image}' is not served: ${warm}, and the ${backend.kind} backend starts no containers of its own`);
    // Its one session is on its container's network: rules could be held by none (a pool's session has a network of its own).
    if (spec.egressRules) throw new NotImplementedError(`networkPolicy.egress: a sandbox in a container of its own (resourceLimits, or an image no pool serves) shares its container's network and holds no egress rules; a warm pool's sandbox does`);
    if (maxDedicated === 0) throw new BadRequestError(`image '${spec.image}' is not served: ${warm}, and dedicated containers are off (BROKER_SANDBOX_MAX_DEDICATED=0)`);
    if (this.count >= maxDedicated) {
      throw new BrokerError('unavailable', 'too_many_sandboxes', `${this.count} dedicated containers run already (BROKER_SANDBOX_MAX_DEDICATED=${maxDedicated}); delete one or use a warm pool's image (${warm})`);
    }
    this.count++;
    try {
      const container = await backend.containers.start({
        kind: 'lifecycle',
        spec: {
          kind: 'lifecycle',
          owner: id,
          image: spec.image,
          env: spec.env,
          entrypoint: spec.entrypoint,
          limits: { cpus: spec.cpus, memoryBytes: spec.memoryBytes, pids: null },
          // Egress denied: a container of its own has no network beyond its loopback.
          network: spec.network === 'none' ? 'none' : null,
          mounts: [],
        },
      });
      const workdir = sessionWorkdir(id);
      try {
        await backend.prepareWorkdir(container, workdir, []);
      } catch (err) {
        await backend.removeContainer(container).catch(() => undefined);
        throw err;
      }
      return new SandboxRecord(id, spec, { kind: 'dedicated', container, workdir }, new Date());
    } catch (err) {
      this.count--;
      throw err;
    }
  }

  /** Removes it; its room is free once it is gone (or the removal failed). */
  async remove(container: ContainerRef): Promise<void> {
    try {
      await this.options.backend.removeContainer(container);
    } finally {
      this.count--;
    }
  }

  /** Why the container failed (it stopped, its control lane is gone), or null: healthy, or the check itself failed (the engine), which decides nothing. */
  async failure(container: ContainerRef): Promise<string | null> {
    const health = await this.options.backend.checkContainer(container).catch(() => null);
    return !health || health.healthy ? null : (health.reason ?? 'unhealthy');
  }
}
