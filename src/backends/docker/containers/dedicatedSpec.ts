/**
 * What a container of its own is made of (a DedicatedContainerSpec, core/ports/containers.ts), as the engine's create
 * options: its spec with the deployment's defaults filled in, and the one label scheme (labels.ts).
 * Pure: no engine call here.
 */
import type Dockerode from 'dockerode';
import type { DedicatedContainerSpec } from '../../../core/ports/containers';
import type { BrokerConfig } from '../../../config/config';
import { containerLabels } from './labels';
import { tmpVolume } from './containerSpec';

/** What a spec leaves to the deployment (BROKER_CONTAINER_*, BROKER_NETWORK_MODE). */
export type DedicatedDefaults = Pick<BrokerConfig['docker'], 'deployment' | 'cpus' | 'memoryBytes' | 'pidsLimit' | 'networkMode'>;

/** Docker's own extras of a start (the lifecycle's pipes), beside the spec's mounts. */
export interface DockerExtras {
  binds?: readonly string[];
  /** A stdin that stays open (an entrypoint that idles reading it). */
  openStdin?: boolean;
}

export function dedicatedCreateOptions(
  name: string,
  spec: DedicatedContainerSpec,
  defaults: DedicatedDefaults,
  instance: string,
  extras: DockerExtras,
  abortSignal: AbortSignal,
): Dockerode.ContainerCreateOptions & { abortSignal: AbortSignal } {
  const { limits } = spec;
  const memory = limits.memoryBytes ?? defaults.memoryBytes;
  const binds = [...(extras.binds ?? []), ...spec.mounts.map((m) => `${m.hostPath}:${m.containerPath}${m.readOnly ? ':ro' : ''}`)];
  const tmpBytes = limits.tmpBytes ?? 0;
  return {
    abortSignal,
    name,
    Image: spec.image,
    ...(spec.entrypoint ? { Entrypoint: [...spec.entrypoint], Cmd: [] } : {}),
    ...(extras.openStdin ? { OpenStdin: true, Tty: false } : {}),
    ...(spec.workdir ? { WorkingDir: spec.workdir } : {}),
    Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
    Labels: containerLabels(defaults.deployment, spec.kind, instance, spec.owner),
    HostConfig: {
      // An init as pid 1 reaps the orphans a kill leaves.
      Init: true,
      NanoCpus: Math.round((limits.cpus ?? defaults.cpus) * 1e9),
      Memory: memory,
      ...(limits.swap === false ? { MemorySwap: memory } : {}),
      PidsLimit: limits.pids ?? defaults.pidsLimit,
      NetworkMode: spec.network ?? defaults.networkMode,
      ...(spec.readOnlyRoot ? { ReadonlyRootfs: true } : {}),
      Binds: binds.length > 0 ? binds : undefined,
      Mounts: tmpBytes > 0 ? [tmpVolume(tmpBytes, defaults.deployment)] : undefined,
      ...(spec.restartsOnFailure ? { RestartPolicy: { Name: 'on-failure', MaximumRetryCount: spec.restartsOnFailure } } : {}),
    },
  };
}
