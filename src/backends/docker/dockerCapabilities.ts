/**
 * What the Docker backend can do beyond a pool's shells, each a capability it declares
 * (core/ports/backend.ts) rather than a class the broker tests for: sandbox groups' containers,
 * task sandboxes' containers, and images on demand. Each is made only where its settings were
 * given: a named or an image's pool backend serves shells alone.
 */
import type Dockerode from 'dockerode';
import type { EngineImages, SessionBackend } from '../../core/ports/backend';
import type { SandboxContainers } from '../../core/ports/sandboxContainers';
import type { TaskBackend } from '../../core/ports/taskPorts';
import type { BrokerConfig } from '../../config/config';
import type { DockerDedicatedContainers } from './containers/dedicatedContainers';
import { DockerSandboxContainers } from './groups/groupContainers';
import { DockerTaskBackend, type TaskContainerOptions } from './tasks/taskContainers';
import { DockerImageStore } from './images/dockerImageStore';
import { sweepImagePoolContainers } from './images/imagePoolSweep';

/** The settings of the capabilities beyond shells: absent, the backend has none of that kind. */
export interface DockerCapabilitySettings {
  /** BROKER_SANDBOX_IMAGE: sandbox groups' containers run it. */
  groupImage?: string;
  /** Task sandboxes' settings (config/taskConfig.ts). */
  tasks?: TaskContainerOptions['tasks'];
}

/** The parts of a Docker backend its capabilities are made of. */
export interface DockerParts {
  docker: Dockerode;
  ownContainers: DockerDedicatedContainers;
  instance: string;
  options: BrokerConfig['docker'] & DockerCapabilitySettings;
}

export function groupContainers(parts: DockerParts): SandboxContainers | undefined {
  const image = parts.options.groupImage;
  return image === undefined ? undefined : new DockerSandboxContainers(parts.docker, parts.ownContainers, { ...parts.options, image }, parts.instance);
}

export function taskContainers(parts: DockerParts): TaskBackend | undefined {
  const tasks = parts.options.tasks;
  return tasks === undefined ? undefined : new DockerTaskBackend(parts.ownContainers, { tasks });
}

/** Images on demand: `backendOf` makes a backend of the same kind for one image (its pool's). */
export function engineImages(docker: Dockerode, backendOf: (image: string, deployment: string) => SessionBackend): EngineImages {
  return {
    store: new DockerImageStore(docker),
    poolBackend: backendOf,
    sweepPools: (deployment, startedAtMs) => sweepImagePoolContainers(docker, deployment, startedAtMs),
  };
}
