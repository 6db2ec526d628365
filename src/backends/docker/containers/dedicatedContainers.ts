/**
 * Containers of their own on Docker (a DedicatedContainerSpec, core/ports/containers.ts): the
 * lifecycle's, the groups' and the tasks' sandboxes start here, under one deadline (containerStart.ts),
 * with one label scheme (labels.ts), their removals retried when the engine fails them
 * (containerRemovals.ts). The Docker side's own step: the port's starts (dockerContainerStarts.ts) dress it.
 */
import type Dockerode from 'dockerode';
import type { ContainerRef } from '../../../core/ports/container';
import type { ContainerKind, DedicatedContainerSpec } from '../../../core/ports/containers';
import type { ContainerRemovals } from './containerRemovals';
import { createAndStart } from './containerStart';
import { dedicatedCreateOptions, type DedicatedDefaults, type DockerExtras } from './dedicatedSpec';
import { containerName, kindFilter, LABEL_DEPLOYMENT, LABEL_INSTANCE } from './labels';

export type DedicatedOptions = DedicatedDefaults & { startTimeoutMs: number };

export interface DedicatedContainer {
  readonly ref: ContainerRef;
  /** Milliseconds the engine took to create and start it. */
  readonly startMs: number;
  /** Removes the container (and its own /tmp). Safe to call twice. */
  remove(): Promise<void>;
}

export class DockerDedicatedContainers {
  constructor(
    private readonly docker: Dockerode,
    private readonly removals: ContainerRemovals,
    private readonly options: DedicatedOptions,
    private readonly instance: string,
  ) {}

  /** The name a spec's container gets (the lifecycle makes its pipes under it before the start). */
  nameOf(spec: Pick<DedicatedContainerSpec, 'kind' | 'owner'>): string {
    return containerName(this.options.deployment, this.instance, spec.kind, spec.owner);
  }

  /** `extras` and `undo` (run when the start fails): the lifecycle's pipes, Docker's own. */
  async start(spec: DedicatedContainerSpec, extras: DockerExtras = {}, undo?: () => Promise<void>): Promise<DedicatedContainer> {
    const name = this.nameOf(spec);
    const t0 = performance.now();
    const container = await createAndStart(
      { docker: this.docker, removals: this.removals, startTimeoutMs: this.options.startTimeoutMs },
      name,
      (deadline) => dedicatedCreateOptions(name, spec, this.options, this.instance, extras, deadline),
      undo,
    );
    const startMs = performance.now() - t0;
    let removed: Promise<void> | null = null;
    return { ref: { id: container.id, name }, startMs, remove: () => (removed ??= this.removals.forceRemove(container.id)) };
  }

  /**
   * Removes every container this broker made, of every kind, that is still on the engine: at its
   * close, after the removals it knows of, for any whose start it took for failed (a create whose
   * answer the engine lost as it died). Returns how many it found.
   */
  async removeOwn(): Promise<number> {
    const own = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_DEPLOYMENT}=${this.options.deployment}`, `${LABEL_INSTANCE}=${this.instance}`] } });
    await Promise.all(own.map((c) => this.removals.forceRemove(c.Id)));
    return own.length;
  }

  /**
   * Removes every container of `kind` this deployment has that an earlier broker left (`all`: also
   * this broker's own, for a kind that sweeps before it starts any).
   */
  async sweep(kind: ContainerKind, all = false): Promise<number> {
    const stale = await this.docker.listContainers({ all: true, filters: kindFilter(this.options.deployment, kind) });
    const left = all ? stale : stale.filter((c) => c.Labels[LABEL_INSTANCE] !== this.instance);
    await Promise.all(left.map((c) => this.removals.forceRemove(c.Id)));
    return left.length;
  }
}
