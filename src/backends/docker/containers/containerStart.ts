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

/** A create and start that failed: `why` says it without the container's name. */
export class ContainerStartError extends BackendError {
  constructor(
    name: string,
    readonly why: string,
    readonly timedOut: boolean,
  ) {
    super(`container ${name} failed to start: ${why}${timedOut ? ' (is dockerd stuck?)' : ''}`);
  }
}

/**
 * Creates and starts container `name` under one deadline (a stuck engine must not hold a start for
 * good), its create options given that deadline. On a failure, `undo` runs, then the container is
 * removed: at once, or by the removal retries when the engine looks stuck.
 */
export async function createAndStart(
  deps: Omit<StartDeps, 'pipes'>,
  name: string,
  createOptions: (deadline: AbortSignal) => Dockerode.ContainerCreateOptions,
  undo: () => Promise<void> = async () => undefined,
): Promise<Dockerode.Container> {
  await deps.removals.retry();
  const deadline = AbortSignal.timeout(deps.startTimeoutMs);
  const failure = (err: unknown): ContainerStartError =>
    deadline.aborted
      ? new ContainerStartError(name, `the engine did not create and start it within ${deps.startTimeoutMs / 1000} s`, true)
      : new ContainerStartError(name, errorMessage(err), false);
  let container: Dockerode.Container;
  try {
    container = await deps.docker.createContainer(createOptions(deadline));
  } catch (err) {
    await undo();
    // A stuck engine may still create it once it moves again, and one that died mid-request may
    // have made it before its answer was lost: without an answer, remove it by name with the retries.
    if (deadline.aborted || (err as { statusCode?: number }).statusCode === undefined) deps.removals.abandonName(name);
    throw failure(err);
  }
  try {
    await container.start({ abortSignal: deadline } as Dockerode.ContainerStartOptions);
  } catch (err) {
    await undo();
    // Past the deadline the engine is likely stuck: leave the removal to the retries, not this start.
    if (deadline.aborted) deps.removals.removeLater(container.id);
    else await deps.removals.forceRemove(container.id);
    throw failure(err);
  }
  return container;
}

/** Creates and starts container `name` with its pipes, its create options given their bind mount and the start's deadline. */
export async function startContainerNamed(
  deps: StartDeps,
  name: string,
  createOptions: (bind: string | null, deadline: AbortSignal) => Dockerode.ContainerCreateOptions,
): Promise<StartedContainer> {
  const spawner = await deps.pipes.newSpawner(name);
  const container = await createAndStart(deps, name, (deadline) => createOptions(spawner?.bind ?? null, deadline), async () => {
    await spawner?.close();
  });
  return { ref: { id: container.id, name }, container, spawner };
}
