/**
 * What the Docker backend declares beyond a pool's shells (core/ports/backend.ts): the containers'
 * port with every kind it starts, and images on demand. A pool's and a lifecycle sandbox's starts
 * are the backend's own (they serve its shells); a group member's and a task sandbox's are helpers
 * here on its side (groups/, tasks/), made only where their settings were given: a named or an
 * image's pool backend starts its pool's containers and lifecycle ones alone.
 */
import type Dockerode from 'dockerode';
import type { ContainerRef } from '../../core/ports/container';
import type { EngineImages, SessionBackend } from '../../core/ports/backend';
import type { ContainerKind, ContainerOrder, ContainerStarts, DedicatedContainerSpec, StartedContainers } from '../../core/ports/containers';
import type { BrokerConfig } from '../../config/config';
import type { DockerDedicatedContainers } from './containers/dedicatedContainers';
import { DockerGroupContainers } from './groups/groupContainers';
import { DockerTaskContainers, type TaskContainerOptions } from './tasks/taskContainers';
import { DockerImageStore } from './images/dockerImageStore';
import { sweepImagePoolContainers } from './images/imagePoolSweep';
import { NotSupportedError } from '../../common/errors';
import type { ShellServing } from './containers/containerLink';

/** The settings of the kinds beyond a pool's and the lifecycle's: absent, the backend starts none of that kind. */
export interface DockerCapabilitySettings {
  /** BROKER_SANDBOX_IMAGE: sandbox groups' containers run it. */
  groupImage?: string;
  /** Task sandboxes' settings (config/taskConfig.ts). */
  tasks?: TaskContainerOptions['tasks'];
}

/** The parts of a Docker backend its starts are made of, and its own two. */
export interface DockerParts {
  docker: Dockerode;
  ownContainers: DockerDedicatedContainers;
  instance: string;
  options: BrokerConfig['docker'] & DockerCapabilitySettings;
  /** A pool's container: created and started (its connect follows). */
  pool(index: number): Promise<ContainerRef>;
  /** A lifecycle sandbox's container of its own, started and connected. */
  lifecycle(spec: DedicatedContainerSpec): Promise<ContainerRef>;
  /** Serves execd's shells in a group member's and a task's container, as in its own. */
  serveShells: ShellServing;
}

export function dockerContainerStarts(parts: DockerParts): ContainerStarts {
  const { groupImage, tasks } = parts.options;
  const groups = groupImage === undefined ? null : new DockerGroupContainers(parts.docker, parts.ownContainers, { ...parts.options, image: groupImage }, parts.instance, parts.serveShells);
  const taskHelper = tasks === undefined ? null : new DockerTaskContainers(parts.docker, parts.ownContainers, { tasks }, parts.serveShells);
  const kinds = new Set<ContainerKind>(['pool', 'lifecycle', ...(groups ? ['group' as const] : []), ...(taskHelper ? ['task' as const] : [])]);
  const lacking = (kind: ContainerKind): never => {
    throw new NotSupportedError(`this docker backend starts no ${kind} containers`);
  };
  const start = async (order: ContainerOrder): Promise<StartedContainers[ContainerKind]> => {
    switch (order.kind) {
      case 'pool':
        return parts.pool(order.index);
      case 'lifecycle':
        return parts.lifecycle(order.spec);
      case 'group':
        return groups ? groups.start(order.group) : lacking('group');
      case 'task':
        return taskHelper ? taskHelper.start(order.task.id) : lacking('task');
    }
  };
  return {
    kinds,
    start: start as ContainerStarts['start'],
    sweep: async (order) => {
      if (order.kind === 'group') return groups ? groups.sweep(order.hostRoot) : 0;
      return taskHelper ? taskHelper.sweep() : 0;
    },
  };
}

/** Images on demand: `backendOf` makes a backend of the same kind for one image (its pool's). */
export function engineImages(docker: Dockerode, backendOf: (image: string, deployment: string) => SessionBackend): EngineImages {
  return {
    store: new DockerImageStore(docker),
    poolBackend: backendOf,
    sweepPools: (deployment, startedAtMs) => sweepImagePoolContainers(docker, deployment, startedAtMs),
  };
}
