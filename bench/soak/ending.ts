/**
 * After the load: abandoned leases probed, the pool settled, then what is inside the containers, the
 * broker stopped, and what is left on the host. Order matters: the container processes are read
 * while the broker still runs (its shells are the expected ones), the leftovers only after it stopped.
 */
import Dockerode from 'dockerode';
import type { BrokerProcess } from '../lib/brokerProcess';
import { sleep } from '../lib/stats';
import type { SoakHttp } from './http';
import { containerProcesses, deploymentContainers, hostProcessesOf, stillAlive, type ContainerProcesses } from './leaks';
import { fdKinds, openFds, type Monitor } from './monitor';
import type { SoakPlan } from './plan';
import type { ReclaimWatch } from './reclaimWatch';
import { settle } from './verdicts';

export interface Ending {
  settled: { ok: boolean; ms: number; detail: string };
  settledFds: number;
  settledFdKinds: Record<string, number>;
  metricsText: string;
  inside: ContainerProcesses;
  hostPids: number[];
  stop: { stopMs: number; killed: boolean };
  leftContainers: number;
  leftHost: string[];
}

export interface EndingParts {
  plan: SoakPlan;
  deployment: string;
  broker: BrokerProcess;
  docker: Dockerode;
  http: SoakHttp;
  monitor: Monitor;
  reclaims: ReclaimWatch;
  stopBroker: () => Promise<{ stopMs: number; killed: boolean }>;
  log: (line: string) => void;
}

export async function endRun(p: EndingParts): Promise<Ending> {
  await p.reclaims.probeAll();
  const settled = await settle(p.broker, p.plan, p.log);
  p.monitor.stop();
  await p.http.close();
  // Node's global agent (dockerode's) keeps idle sockets to dockerd for 5 s: let them close first.
  await sleep(6000);
  const settledFds = openFds(p.broker.pid);
  const settledFdKinds = fdKinds(p.broker.pid);
  const metricsText = await p.broker.metrics().catch(() => '');
  const inside = await containerProcesses(p.docker, p.deployment, p.plan.perContainer);
  p.log(`containers: ${inside.containers}, leaked processes: ${inside.leaks.length}`);
  const containerIds = (await deploymentContainers(p.docker, p.deployment)).map((c) => c.Id);
  const hostPids = hostProcessesOf(p.broker.pid, containerIds);
  const stop = await p.stopBroker();
  p.log(`broker stopped in ${(stop.stopMs / 1000).toFixed(1)} s${stop.killed ? ' (SIGKILL)' : ''}`);
  // The warm pool's containers (the SDK's sandboxes) carry a deployment label of their own.
  const left = [...(await deploymentContainers(p.docker, p.deployment)), ...(await deploymentContainers(p.docker, `${p.deployment}.warm`))];
  await Promise.all(left.map((c) => p.docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
  const leftHost = await stillAlive(hostPids, 15_000);
  return { settled, settledFds, settledFdKinds, metricsText, inside, hostPids, stop, leftContainers: left.length, leftHost };
}
