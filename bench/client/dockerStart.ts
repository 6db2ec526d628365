/**
 * Docker's own time to create and start containers: the floor of the broker's warm-up. The containers
 * are the broker's own spec (containerSpec.ts) without its pipes or control shell, so what is left is
 * the engine's work alone.
 */
import Dockerode from 'dockerode';
import { loadConfig } from '../../src/config/config';
import { containerCreateOptions } from '../../src/backends/docker/containers/containerSpec';
import { FLOOR_DEPLOYMENT, type DockerStartResult } from '../protocol';
import { mapLimit, nowMs } from '../lib/stats';
import { cpuBreakdown, snapshotCpu } from '../lib/cpuAccount';

export async function dockerStartFloor(image: string, count: number, concurrency: number): Promise<DockerStartResult> {
  const docker = new Dockerode();
  const options = loadConfig({ BROKER_BACKEND: 'docker', BROKER_IMAGE: image }).docker;
  const ids: string[] = [];
  const removeAll = (): Promise<unknown> =>
    mapLimit(ids, concurrency, (id) => docker.getContainer(id).remove({ force: true, v: true }).catch(() => undefined));
  const cpuBefore = snapshotCpu();
  const t0 = nowMs();
  try {
    await mapLimit(Array.from({ length: count }, (_, i) => i), concurrency, async (i) => {
      // The broker's own container spec (its entrypoint idles without the broker's pipes), under the floor's deployment.
      const spec = containerCreateOptions(`bench-floor-${process.pid}-c${i}`, { ...options, deployment: FLOOR_DEPLOYMENT }, 'bench-floor', null, new AbortController().signal);
      const container = await docker.createContainer(spec);
      ids.push(container.id);
      await container.start();
    });
  } catch (err) {
    await removeAll();
    throw err;
  }
  const createStartMs = nowMs() - t0;
  const cpu = cpuBreakdown(cpuBefore, snapshotCpu(), { client: process.pid, containerIds: new Set(ids) });
  const r0 = nowMs();
  await removeAll();
  return { count, concurrency, createStartMs, removeMs: nowMs() - r0, cpu };
}
