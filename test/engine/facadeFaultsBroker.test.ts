/**
 * Faults of the broker itself under a mixed load on every facade (mixedLoad.ts, a lifecycle sandbox
 * in a container of its own, and a sandbox group with one sandbox), the broker a real process (the compiled entry point, brokerProcess.ts) on
 * the Docker backend:
 *  - SIGTERM: a clean stop. Each holder gets an answer or a closed connection (never a hang), the
 *    process exits 0 on its own, and nothing is left: no container of its deployment (pools and
 *    sandboxes alike), no process of those containers, no child process of the broker, no mount or
 *    directory of its group.
 *  - SIGKILL: nothing is cleaned up; the next broker of the deployment sweeps every container, mount
 *    and group directory the dead one left, and serves every facade again.
 * Group sandboxes need root (loop-mounted disks), as every group suite on Docker.
 * Every wait is on a state.
 * @backend docker
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import { eventually, testDeployment, type HttpResult } from '../helpers/broker';
import { call, closeClients } from '../../devtools/clusterProcs';
import { BrokerProcess } from '../../devtools/brokerProcess';
import { describeDocker } from '../helpers/dockerSuite';
import { labelledContainers, removeLabelledContainers, within } from '../helpers/dockerFaults';
import { expectServing, MIXED_LOAD_POOLS, startMixedLoad, type BrokerClient, type MixedLoad } from '../helpers/mixedLoad';
import { hostPidsOfContainers } from '../../devtools/privateDockerdCleanup';
import { childPids, procAlive } from '../../devtools/procs';
import { bashToEnd, mountsUnder } from '../../devtools/groupClient';
import { execdBase, startSse, textOf } from '../helpers/execdClient';

const LONG_MS = 120_000;
jest.setTimeout(420_000);
const IMAGE = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
const DEPLOYMENT = testDeployment(`ff-broker-${process.pid}`);
const docker = new Dockerode();
const GROUP_DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'bkr-ff-broker-groups-'));
const FIRST_PORT = 20_000 + Math.floor(Math.random() * 40_000);

const ENV: Record<string, string> = {
  BROKER_BACKEND: 'docker',
  BROKER_IMAGE: IMAGE,
  BROKER_DEPLOYMENT: DEPLOYMENT,
  BROKER_POOLS: MIXED_LOAD_POOLS(IMAGE),
  BROKER_CONTAINERS: '2',
  BROKER_SESSIONS_PER_CONTAINER: '2',
  BROKER_HEALTH_INTERVAL: '0.5',
  BROKER_SHUTDOWN_GRACE: '3',
  BROKER_NETWORK_MODE: process.env.BROKER_NETWORK_MODE ?? 'none',
  BROKER_SANDBOX_IMAGE: 'bash-broker-sandbox:latest',
  BROKER_SANDBOX_PORTS: `${FIRST_PORT}-${FIRST_PORT + 20}`,
  BROKER_GROUP_DIR: GROUP_DIR,
  HOST: '127.0.0.1',
  PORT: '0',
};

function client(bp: BrokerProcess): BrokerClient {
  return { url: bp.url, post: (path, body) => call(bp.url, 'POST', path, body ?? {}), get: (path) => call(bp.url, 'GET', path) };
}

/** Every container of the deployment on the engine: the default pool's, the warm pool's, sandboxes'. */
async function containersNow(): Promise<string[]> {
  return [...(await labelledContainers(docker, DEPLOYMENT)), ...(await labelledContainers(docker, `${DEPLOYMENT}.warm`))].map((c) => c.Id);
}

/** A group with one sandbox that runs a command; its URL. */
async function startGroupSandbox(b: BrokerClient): Promise<string> {
  expect((await b.post('/group/start', {})).status).toBe(200);
  const r = await b.post('/sandbox/start', { id: 'solo', compute_resources: { cpu_cores: 0.25, ram_gb: 0.125, disk_gb: 0.05 } });
  if (r.status !== 200) throw new Error(`sandbox start answered ${r.status}: ${r.text}`);
  expect((await bashToEnd(r.json.sandbox_url, 'echo solo')).stdout).toBe('solo\n');
  return r.json.sandbox_url as string;
}

/** A lifecycle sandbox of an image no pool serves (a container of its own) that ran a command. */
async function startDedicatedSandbox(b: BrokerClient): Promise<void> {
  const r = await b.post('/v1/sandboxes', { image: { uri: 'bash-broker-sandbox:latest' }, entrypoint: ['tail', '-f', '/dev/null'], timeout: 600 });
  if (r.status !== 202) throw new Error(`dedicated sandbox create answered ${r.status}: ${r.text}`);
  const run = await startSse(`${execdBase(b.url, r.json.id)}/command`, { command: 'echo mine' });
  await run.done;
  expect(textOf(run.events, 'stdout')).toBe('mine');
}

/** What is left of groups on the host: mounts under the groups' directory, and group directories in the deployment's. */
function groupsLeft(): string[] {
  const root = path.join(GROUP_DIR, DEPLOYMENT); // one per deployment
  const dirs = fs.existsSync(root) ? fs.readdirSync(root).map((d) => path.join(root, d)) : [];
  return [...mountsUnder(GROUP_DIR), ...dirs];
}

/** A broker process that serves: the default pool full and healthy, the warm pool full. */
async function startBroker(): Promise<BrokerProcess> {
  const bp = await BrokerProcess.start('broker', ENV);
  let last: HttpResult | null = null;
  await eventually(
    async () => {
      last = await call(bp.url, 'GET', '/health');
      return last.json?.status === 'healthy' && last.json.available_sessions === 4 && last.json.pools?.warm?.available_sessions === 1;
    },
    LONG_MS,
    () => `the broker warm (last /health: ${last?.text}; log:\n${bp.output.slice(-3000)})`,
  );
  return bp;
}

describeDocker('the broker SIGTERMed or SIGKILLed under a mixed load on every facade', () => {
  const started: BrokerProcess[] = [];
  let load: MixedLoad | null = null;

  afterEach(async () => {
    load?.close();
    load = null;
    for (const bp of started.splice(0)) await bp.kill9();
  });

  beforeAll(() => {
    if (process.getuid?.() !== 0) throw new Error('group sandboxes need root on the engine host (loop-mounted disks)');
  });

  afterAll(async () => {
    await closeClients();
    fs.rmSync(GROUP_DIR, { recursive: true, force: true });
    await removeLabelledContainers(docker, DEPLOYMENT);
    await removeLabelledContainers(docker, `${DEPLOYMENT}.warm`);
  });

  it('SIGTERM: every holder is answered, the process exits 0, and nothing of it is left', async () => {
    const bp = await startBroker();
    started.push(bp);
    const b = client(bp);
    load = await startMixedLoad(b);
    await startGroupSandbox(b);
    await startDedicatedSandbox(b);
    const containers = await containersNow();
    expect(containers).toHaveLength(5);
    expect(groupsLeft()).not.toEqual([]);
    const children = childPids(bp.pid);

    const stopping = bp.stop(); // SIGTERM (once: a second one means "exit now")
    // Every holder learns of it: an answer that says why, or a closed connection; never a hang.
    const run = await within(load.leaseRun, LONG_MS, 'the running lease command');
    if (!(run instanceof Error)) {
      expect(run.status).toBeGreaterThanOrEqual(400);
      expect(typeof run.json.detail).toBe('string');
    }
    await within(load.sandboxRun.done.catch(() => undefined), LONG_MS, "the sandbox's command stream");
    expect(JSON.stringify(load.sandboxRun.events)).not.toContain('finished');
    await eventually(() => load!.viewer.socket.readyState === load!.viewer.socket.CLOSED, LONG_MS, 'the workspace viewer closed');

    // A clean stop, on its own (BrokerProcess would SIGKILL it only after 20 s): exit code 0.
    await within(stopping, LONG_MS, 'the broker to exit');
    expect(bp.exitStatus).toEqual({ code: 0, signal: null });
    expect(await containersNow()).toEqual([]);
    await eventually(() => hostPidsOfContainers(containers).length === 0, LONG_MS, 'no process of its containers left');
    expect(children.filter(procAlive)).toEqual([]);
    expect(groupsLeft()).toEqual([]);
  });

  it('SIGKILL: its containers are left as they were; the next broker sweeps them all and serves every facade', async () => {
    const first = await startBroker();
    started.push(first);
    load = await startMixedLoad(client(first));
    await startGroupSandbox(client(first));
    await startDedicatedSandbox(client(first));
    const left = await containersNow();
    expect(left).toHaveLength(5);

    await first.kill9();
    // Its clients see their connections closed.
    await within(load.leaseRun, LONG_MS, 'the running lease command');
    await within(load.sandboxRun.done.catch(() => undefined), LONG_MS, "the sandbox's command stream");
    load.close();
    load = null;
    // Nothing cleaned up: its containers still run.
    expect((await containersNow()).sort()).toEqual([...left].sort());

    const next = await startBroker();
    started.push(next);
    // The sweep runs from its start: every container, mount and group directory of the dead one goes.
    await eventually(async () => (await containersNow()).every((id) => !left.includes(id)), LONG_MS, 'the containers the dead broker left removed');
    expect(await containersNow()).toHaveLength(3);
    await eventually(() => groupsLeft().length === 0, LONG_MS, () => `nothing of the dead broker's group left (${groupsLeft().join(', ')})`);
    await eventually(() => hostPidsOfContainers(left).length === 0, LONG_MS, 'no process of the swept containers left');
    await expectServing(client(next), null);
    await startGroupSandbox(client(next));

    await within(next.stop(), LONG_MS, 'the second broker to exit');
    expect(next.exitStatus).toEqual({ code: 0, signal: null });
    expect(await containersNow()).toEqual([]);
    expect(groupsLeft()).toEqual([]);
  });
});
