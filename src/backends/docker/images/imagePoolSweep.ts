/**
 * Containers of image pools an earlier broker of this deployment left (it crashed, or was killed):
 * their deployment label is this deployment's with `.i-<hash>` (brokerImages.ts), which no image pool
 * backend sweeps unless that image is acquired again. Only containers created before this broker
 * started go: an image pool of this broker may be starting its first container meanwhile.
 */
import type Dockerode from 'dockerode';
import { LABEL_DEPLOYMENT } from '../containers/labels';

export async function sweepImagePoolContainers(docker: Dockerode, deployment: string, startedAtMs: number): Promise<number> {
  const prefix = `${deployment}.i-`;
  const all = await docker.listContainers({ all: true, filters: { label: [LABEL_DEPLOYMENT] } });
  const stale = all.filter((c) => (c.Labels[LABEL_DEPLOYMENT] ?? '').startsWith(prefix) && c.Created * 1000 < startedAtMs - 1000);
  await Promise.all(stale.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined)));
  return stale.length;
}
