/**
 * A container as every port names it: a session backend's, a container of its own
 * (dedicatedContainers.ts), a group's sandbox.
 */

/** A "container": an isolation unit holding several sessions (a Docker container, a local root). */
export interface ContainerRef {
  readonly id: string;
  readonly name: string;
}

export interface ContainerHealth {
  healthy: boolean;
  reason?: string;
}
