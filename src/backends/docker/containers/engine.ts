/**
 * The broker's one client of the Docker engine (DOCKER_HOST, or its default socket), shared by the
 * pools, the lifecycle's, groups' and tasks' containers: one set of connections, one place to point it.
 */
import Dockerode from 'dockerode';

let engine: Dockerode | null = null;

export function dockerEngine(): Dockerode {
  return (engine ??= new Dockerode());
}
