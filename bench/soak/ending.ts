/**
 * After the load: abandoned leases probed, the pool settled, then what is inside the containers, the
 * broker stopped, and what is left on the host. Order matters: the container processes are read
 * while the broker still runs (its shells are the expected ones), the leftovers only after it stopped.
 */
import Dockerode from 'dockerode';
import type { BrokerProcess } from '../lib/brokerProcess';
import { sleep } from '../lib/stats';
import type { SoakHttp } from './http';
import { containerProcesses, deploymentContainers, hostProcessesOf, kindContainers, stillAlive, type ContainerProcesses } from './leaks';
import { mountsUnder } from '../../devtools/groupClient';
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
  /** What the facades still had registered once the load ended (null: the closed-loop run has none). */
  registrations: Registrations | null;
}

export interface Registrations {
  workspaces: number;
  lifecycleSandboxes: number;
  groupContainers: number;
  taskContainers: number;
  /** Mounts under the groups' directory after the group stopped and the broker stopped. */
  mounts: string[];
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
  /** The groups' directory of a sized run (its group is stopped at the end); null otherwise. */
  groupDir: string | null;
}

/** What the facades hold with the load over and the pool settled: every count must be 0. */
async function registered(p: EndingParts): Promise<Omit<Registrations, 'mounts'>> {
  const workspaces = await p.http.get('/workspaces');
  const sandboxes = await p.http.get('/v1/sandboxes?pageSize=100');
  return {
    workspaces: Array.isArray(workspaces.body) ? workspaces.body.length : NaN,
    lifecycleSandboxes: Array.isArray(sandboxes.body?.items) ? sandboxes.body.items.length : NaN,
    groupContainers: (await kindContainers(p.docker, p.deployment, 'group')).length,
    taskContainers: (await kindContainers(p.docker, p.deployment, 'task')).length,
  };
}

export async function endRun(p: EndingParts): Promise<Ending> {
  await p.reclaims.probeAll();
  const settled = await settle(p.broker, p.plan, p.log);
  const held = p.groupDir === null ? null : await registered(p);
  if (held) p.log(`registered after the load: ${JSON.stringify(held)}`);
  if (p.groupDir !== null) {
    const stopped = await p.http.post('/group/stop', {});
    if (stopped.status !== 200) p.log(`the group's stop answered HTTP ${stopped.status}`);
  }
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
  const registrations = held && p.groupDir !== null ? { ...held, mounts: mountsUnder(p.groupDir) } : null;
  return { settled, settledFds, settledFdKinds, metricsText, inside, hostPids, stop, leftContainers: left.length, leftHost, registrations };
}
