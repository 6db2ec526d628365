/**
 * The one label scheme of every container the broker starts (pool, lifecycle, group and task alike):
 * the deployment, what it is for (its kind), whose it is (its owner) and the broker instance that
 * started it. A broker's start sweeps its deployment's containers of a kind by these; so does a CI
 * run's cleanup (by the deployment alone).
 */
import type { ContainerKind } from '../../../core/ports/containers';

export const LABEL_DEPLOYMENT = 'io.bash-broker.deployment';
export const LABEL_KIND = 'io.bash-broker.kind';
/** The sandbox, group sandbox or task id a container of its own is for (absent on a pool's containers). */
export const LABEL_OWNER = 'io.bash-broker.owner';
export const LABEL_INSTANCE = 'io.bash-broker.instance';

export function containerLabels(deployment: string, kind: ContainerKind, instance: string, owner?: string): Record<string, string> {
  const labels: Record<string, string> = { [LABEL_DEPLOYMENT]: deployment, [LABEL_KIND]: kind, [LABEL_INSTANCE]: instance };
  if (owner !== undefined) labels[LABEL_OWNER] = owner;
  return labels;
}

/** The engine's label filter for a deployment's containers of one kind. */
export function kindFilter(deployment: string, kind: ContainerKind): { label: string[] } {
  return { label: [`${LABEL_DEPLOYMENT}=${deployment}`, `${LABEL_KIND}=${kind}`] };
}

/** A container name the engine accepts, from parts. */
export function containerName(...parts: string[]): string {
  return ['bash-broker', ...parts].join('-').replace(/[^a-zA-Z0-9_.-]/g, '-');
}
