/**
 * A container created and started under one deadline, and what each failure leaves cleaned up: its
 * pipes closed, the container removed (at once, or by the removal retries when the engine looks
 * stuck). Apart from dockerBackend.ts, which keeps a container once it has started (connects it,
 * opens its shells, removes it): this is the part that talks to a possibly stuck engine.
 */
import type Dockerode from 'dockerode';
import type { ContainerRef } from '../../../core/ports/backend';
import { BackendError, errorMessage } from '../../../common/errors';
import type { FifoSpawner } from '../shells/fifoSpawner';
import type { ContainerRemovals } from './containerRemovals';
import type { PipeTransport } from '../shells/pipeTransport';

/** A container started but not yet connected (DockerBackend.connectContainer): its pipes, if any. */
export interface StartedContainer {
  ref: ContainerRef;
  container: Dockerode.Container;
  spawner: FifoSpawner | null;
}

/** What a start needs of its backend. */
export interface StartDeps {
  docker: Dockerode;
  removals: ContainerRemovals;
  pipes: PipeTransport;
  startTimeoutMs: number;
}

/** Creates and starts container `name`, its create options given its pipes' bind mount and the start's deadline. */
export async function startContainerNamed(
  deps: StartDeps,
  name: string,
  createOptions: (bind: string | null, deadline: AbortSignal) => Dockerode.ContainerCreateOptions,
): Promise<StartedContainer> {
  await deps.removals.retry();
  const spawner = await deps.pipes.newSpawner(name);
  // One deadline over create and start: a stuck engine must not hold a start slot for good.
  const deadline = AbortSignal.timeout(deps.startTimeoutMs);
  const failure = (err: unknown): BackendError =>
    new BackendError(
      deadline.aborted
        ? `container ${name} failed to start: the engine did not create and start it within ${deps.startTimeoutMs / 1000} s (is dockerd stuck?)`
        : `container ${name} failed to start: ${errorMessage(err)}`,
    );
  let container: Dockerode.Container;
  try {
    container = await deps.docker.createContainer(createOptions(spawner?.bind ?? null, deadline));
  } catch (err) {
    await spawner?.close();
    // A stuck engine may still create it once it moves again: remove it by name with the retries.
    if (deadline.aborted) deps.removals.abandonName(name);
    throw failure(err);
  }
  try {
    await container.start({ abortSignal: deadline } as Dockerode.ContainerStartOptions);
  } catch (err) {
    await spawner?.close();
    // Past the deadline the engine is likely stuck: leave the removal to the retries, not this start.
    if (deadline.aborted) deps.removals.removeLater(container.id);
    else await deps.removals.forceRemove(container.id);
    throw failure(err);
  }
  return { ref: { id: container.id, name }, container, spawner };
}
