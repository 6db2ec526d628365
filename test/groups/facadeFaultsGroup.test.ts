/**
 * Fault on the sandbox-group API: a group sandbox's container killed (docker kill) while a bash
 * action runs in it. The action answers (no hang) with an observation that says the container
 * failed, the sandbox's /health says so, the next action says so too, the sandbox stops cleanly
 * (nothing of it left on the engine), and a sandbox started again under the same id works; a
 * neighbour sandbox of the group is untouched. Needs root (loop-mounted sandbox disks), as every
 * group suite on Docker. Every wait is on a state.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, testDeployment, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { containerExists, untilRunningIn } from '../helpers/dockerFaults';
import { groupBrokerEnv, makeGroupFixtures, type GroupFixtures } from '../helpers/groupFixtures';
import { bash, bashToEnd, call, listening } from '../../devtools/groupClient';
import { LABEL_DEPLOYMENT, LABEL_KIND, LABEL_OWNER } from '../../src/backends/docker/containers/labels';

const LONG = 90_000;
jest.setTimeout(300_000);
const DEPLOYMENT = testDeployment(`ff-group-${process.pid}`);
const docker = new Dockerode();
const COMPUTE = { cpu_cores: 0.25, ram_gb: 0.125, disk_gb: 0.05 };

describeDocker("docker: a group sandbox's container killed during an action", () => {
  let tb: TestBroker;
  let fx: GroupFixtures;

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('group sandboxes need root on the engine host (loop-mounted disks)');
    fx = makeGroupFixtures('bkr-ff-group');
    // A long action wait: the killed action is still waiting for its command when the container goes.
    tb = await startTestBroker(groupBrokerEnv(fx, DEPLOYMENT, { BROKER_ACTION_WAIT: '120' }));
    expect((await tb.post('/group/start', {})).status).toBe(200);
  });

  afterAll(async () => {
    await tb?.post('/group/stop').catch(() => undefined);
    await tb?.close();
    fx?.remove();
  });

  /** The containers (running or not) of the group's sandbox `id` (owned by group/sandbox). */
  const sandboxContainers = async (id: string): Promise<Dockerode.ContainerInfo[]> =>
    (await docker.listContainers({ all: true, filters: { label: [`${LABEL_DEPLOYMENT}=${DEPLOYMENT}`, `${LABEL_KIND}=group`] } })).filter((c) => c.Labels[LABEL_OWNER]?.endsWith(`/${id}`));

  async function start(id: string): Promise<string> {
    const r = await tb.post('/sandbox/start', { id, compute_resources: COMPUTE });
    if (r.status !== 200) throw new Error(`sandbox start answered ${r.status}: ${JSON.stringify(r.json)}`);
    return r.json.sandbox_url as string;
  }

  it('the action answers that the container failed, /health says so, the sandbox stops clean and starts again', async () => {
    const victim = await start('victim');
    const neighbour = await start('neighbour');
    expect((await bashToEnd(neighbour, 'export KEEP=neighbour; echo ok')).stdout).toBe('ok\n');
    const [info] = await sandboxContainers('victim');
    expect(info?.State).toBe('running');

    const action = bash(victim, 'echo started; sleep 300; echo finished');
    await untilRunningIn(docker, info.Id, 'sleep 300', LONG);
    await docker.getContainer(info.Id).kill();

    // The action in flight answers, and says what happened (not a fresh-shell notice in a dead container).
    const observation = await action;
    expect(observation.stdout).not.toContain('finished');
    expect(observation.terminal_still_running).toBe(false);
    expect(observation.stderr).toMatch(/container .*(failed|exited|gone)/i);

    // Its health and its next action say so, every time: clear, never a hang or a 5xx with no body.
    await eventually(async () => (await call(`${victim}/health`, 'GET')).status === 503, LONG, "the sandbox's /health to say unhealthy");
    const health = await call(`${victim}/health`, 'GET');
    expect(health.json).toMatchObject({ status: 'unhealthy', reason: expect.stringMatching(/exited|not running|gone/) });
    for (let i = 0; i < 2; i++) {
      const next = await bash(victim, 'echo hi');
      expect(next.stdout).toBe('');
      expect(next.stderr).toMatch(/container .*(failed|exited|gone)/i);
    }

    // The neighbour never noticed.
    expect((await bashToEnd(neighbour, 'echo $KEEP')).stdout).toBe('neighbour\n');

    // The broker heals: the dead sandbox stops cleanly (nothing left), and starts again under its id.
    const stopped = await tb.post('/sandbox/stop', { id: 'victim' });
    expect([stopped.status, stopped.json]).toEqual([200, { status: 'stopped' }]);
    expect(await containerExists(docker, info.Id)).toBe(false);
    expect(await listening(Number(new URL(victim).port))).toBe(false);
    const again = await start('victim');
    expect((await bashToEnd(again, 'echo fresh')).stdout).toBe('fresh\n');
    expect(await sandboxContainers('victim')).toHaveLength(1);
  });
});
