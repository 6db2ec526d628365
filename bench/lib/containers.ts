/**
 * The containers this run makes: the broker's (deployment "bench-<run>"), the floors' ("bench-floor-<run>",
 * "bench-floor-exec-<run>", "bench-floor-shell-<run>", "bench-floor-episodes-<run>") and the workspace
 * phase's ("bench-workspace-<run>").
 */
import Dockerode from 'dockerode';
import { LABEL_DEPLOYMENT } from '../../src/backends/docker/dockerBackend';
import { BENCH_DEPLOYMENT, EPISODE_FLOOR_DEPLOYMENT, FLOOR_DEPLOYMENT, FLOOR_EXEC_DEPLOYMENT, SHELL_FLOOR_DEPLOYMENT, WORKSPACE_DEPLOYMENT } from '../protocol';

export async function benchContainers(docker: Dockerode): Promise<Dockerode.ContainerInfo[]> {
  const labels = [BENCH_DEPLOYMENT, FLOOR_DEPLOYMENT, FLOOR_EXEC_DEPLOYMENT, SHELL_FLOOR_DEPLOYMENT, EPISODE_FLOOR_DEPLOYMENT, WORKSPACE_DEPLOYMENT].map((d) => `${LABEL_DEPLOYMENT}=${d}`);
  const lists = await Promise.all(labels.map((label) => docker.listContainers({ all: true, filters: { label: [label] } }).catch(() => [])));
  return lists.flat();
}

/** Removes what is left (there should be nothing); returns how many there were. */
export async function sweepBenchContainers(docker: Dockerode): Promise<number> {
  const left = await benchContainers(docker);
  await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined)));
  return left.length;
}
