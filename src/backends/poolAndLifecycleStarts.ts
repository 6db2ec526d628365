/**
 * The containers' port (core/ports/containers.ts) of a backend that starts a pool's containers and
 * lifecycle sandboxes' containers of their own, and no other kind (the local backend: a directory
 * each). A group's or a task's start is refused; their services ask `kinds` first and answer 501.
 */
import type { ContainerRef } from '../core/ports/container';
import type { ContainerKind, ContainerOrder, ContainerStarts, DedicatedContainerSpec, StartedContainers } from '../core/ports/containers';
import { NotSupportedError } from '../common/errors';

export function poolAndLifecycleStarts(backendKind: string, pool: (index: number) => Promise<ContainerRef>, lifecycle: (spec: DedicatedContainerSpec) => Promise<ContainerRef>): ContainerStarts {
  const start = async (order: ContainerOrder): Promise<StartedContainers[ContainerKind]> => {
    if (order.kind === 'pool') return pool(order.index);
    if (order.kind === 'lifecycle') return lifecycle(order.spec);
    throw new NotSupportedError(`the ${backendKind} backend starts no ${order.kind} containers`);
  };
  return { kinds: new Set<ContainerKind>(['pool', 'lifecycle']), start: start as ContainerStarts['start'], sweep: async () => 0 };
}
