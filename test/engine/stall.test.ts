/**
 * A running container that misses health pings (its control shell starved of CPU, or stuck) is not
 * replaced at the first miss: leases on it would lose their state for a slow moment. It is replaced
 * once its control shell has answered nothing for BROKER_CONTAINER_STALL_TIMEOUT. The stall is made
 * for real: the control lanes' bash processes are SIGSTOPped from outside (`docker exec kill`).
 * Bounds are generous (the stall timeout is 30x the ping timeout): the short stall ends with a
 * `docker exec kill -CONT`, which on a loaded host can itself take seconds, and a stall timeout of a
 * few seconds would then turn the short stall into a long one. No timing is measured.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { containerExists, execIn, lanePids, poolContainerIds } from '../helpers/dockerFaults';

jest.setTimeout(300_000);
const docker = new Dockerode();

async function signalLanes(containerId: string, signal: 'STOP' | 'CONT', pids: number[]): Promise<void> {
  const r = await execIn(docker, containerId, ['kill', `-${signal}`, ...pids.map(String)]);
  expect(r.code).toBe(0);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeDocker('docker stalled container', () => {
  let tb: TestBroker | null = null;
  afterEach(async () => {
    await tb?.close();
    tb = null;
  });

  it('missed pings alone do not replace a running container; silence past the stall timeout does', async () => {
    tb = await startTestBroker({
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: '2',
      BROKER_HEALTH_INTERVAL: '0.5',
      BROKER_CONTAINER_PING_TIMEOUT: '1',
      BROKER_CONTAINER_STALL_TIMEOUT: '30',
    });
    const [cid] = poolContainerIds(tb);
    const id = await tb.acquire();
    await tb.exec(id, 'export KEPT=yes');
    const lanes = await lanePids(docker, cid);
    expect(lanes.length).toBe(2); // the signal lane and the fs lane

    // A short stall: several pings time out (1 s each), the container stays, the lease keeps its state.
    await signalLanes(cid, 'STOP', lanes);
    await sleep(3_500);
    expect(poolContainerIds(tb)).toEqual([cid]);
    await signalLanes(cid, 'CONT', lanes);
    expect((await tb.exec(id, 'echo $KEPT')).stdout).toBe('yes\n');
    expect(poolContainerIds(tb)).toEqual([cid]);

    // A stall longer than the stall timeout: the container is replaced, the lease learns it (410).
    await signalLanes(cid, 'STOP', lanes);
    await eventually(async () => !(await containerExists(docker, cid)), 120_000, 'the stalled container replaced');
    const after = await tb.post(`/session/${id}/execute`, { command: 'echo $KEPT' });
    expect(after.status).toBe(410);
    expect(JSON.stringify(after.json)).toMatch(/did not answer for \d+ s/);
    await tb.release(id);
    const health = await tb.waitAllAvailable(90_000);
    expect(health.available_sessions).toBe(2);
    expect(poolContainerIds(tb)).not.toContain(cid);
  });
});
