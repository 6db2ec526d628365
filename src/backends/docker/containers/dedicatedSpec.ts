/**
 * A lifecycle sandbox's own container (an image no warm pool serves): the session containers' spec
 * (containerSpec.ts) with the sandbox's image, environment, limits and entry process. Pure: no
 * engine call here.
 */
import type Dockerode from 'dockerode';
import type { DedicatedSpec } from '../../../core/ports/backend';
import { containerCreateOptions, type ContainerSpecOptions } from './containerSpec';
import { SPAWNER_SCRIPT } from '../shells/fifoSpawner';

/** The sandbox id each dedicated container carries, so a listing of the engine names its sandbox. */
export const LABEL_SANDBOX = 'io.bash-broker.sandbox';

export function dedicatedCreateOptions(
  name: string,
  base: ContainerSpecOptions,
  spec: DedicatedSpec,
  instance: string,
  bind: string | null,
  abortSignal: AbortSignal,
): Dockerode.ContainerCreateOptions & { abortSignal: AbortSignal } {
  const options = containerCreateOptions(
    name,
    { ...base, image: spec.image, env: spec.env, cpus: spec.cpus ?? base.cpus, memoryBytes: spec.memoryBytes ?? base.memoryBytes },
    instance,
    bind,
    abortSignal,
  );
  // The broker's spawner stays the entrypoint (it serves the shells execd runs); the sandbox's own
  // entry process runs beside it, its output in the container's log, its stdin closed. The
  // container outlives it: the sandbox ends when it is deleted or expires, not when that exits.
  options.Entrypoint = ['bash', '-c', `"$@" </dev/null &\n${SPAWNER_SCRIPT}`, 'sandbox-entrypoint', ...spec.entrypoint];
  options.Labels = { ...options.Labels, [LABEL_SANDBOX]: spec.sandboxId };
  return options;
}
