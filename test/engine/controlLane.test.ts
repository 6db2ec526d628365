/**
 * The control lanes on a real container (controlLane.ts): a request that overruns its deadline
 * fails with a BackendError, a lane that was running it is replaced (its bash killed) and the next
 * request gets a new bash, and requests queued behind it are not lost. No timing assertions.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { describeDocker } from '../helpers/dockerSuite';
import { execIn } from '../helpers/dockerFaults';
import { ControlLane } from '../../src/backends/docker/control/controlLane';
import { execChannelOpener } from '../../src/backends/docker/shells/channel';
import { BackendError } from '../../src/common/errors';
import { testDeployment } from '../helpers/broker';

jest.setTimeout(120_000);
const docker = new Dockerode();

describeDocker('control lanes', () => {
  let container: Dockerode.Container;
  const lanes: ControlLane[] = [];

  beforeAll(async () => {
    container = await docker.createContainer({
      Image: process.env.BROKER_IMAGE ?? 'bash-broker-test:latest',
      Entrypoint: ['bash'],
      Cmd: [],
      OpenStdin: true,
      Labels: { 'io.bash-broker.deployment': testDeployment(`lanes-${process.pid}`) },
      HostConfig: { Init: true },
    });
    await container.start();
  });

  afterAll(async () => {
    await Promise.all(lanes.map((l) => l.close()));
    await container.remove({ force: true, v: true });
  });

  function lane(discardGraceMs = 0): ControlLane {
    const l = new ControlLane({ openChannel: execChannelOpener(container), name: 'test lane', initScript: '__t(){ builtin echo t; }', discardGraceMs });
    lanes.push(l);
    return l;
  }

  it('a request that overruns its deadline fails alone; the lane gets a new bash, the queue goes on', async () => {
    const l = lane();
    const first = Number(await l.run('builtin echo $$', 20_000));
    expect(first).toBeGreaterThan(1);
    const stuck = l.run('sleep 600', 1_000);
    const queued = l.run('builtin echo $$; __t', 60_000);
    await expect(stuck).rejects.toBeInstanceOf(BackendError);
    await expect(stuck).rejects.toThrow(/no answer within 1000 ms \(running\): sleep 600/);
    const [pid, t] = (await queued).trim().split('\n');
    expect(Number(pid)).not.toBe(first); // a new bash, with the init script defined again
    expect(t).toBe('t');
  });

  it('a request that expires while queued fails without touching the running one', async () => {
    const l = lane();
    const pid = await l.run('builtin echo $$', 20_000);
    const slow = l.run('sleep 2; builtin echo slept', 60_000);
    await expect(l.run(':', 100)).rejects.toThrow(/\(queued\)/);
    expect(await slow).toBe('slept\n');
    expect(await l.run('builtin echo $$', 20_000)).toBe(pid);
  });

  it('with a discard grace, an overrunning request fails its caller but its bash finishes it', async () => {
    const l = lane(60_000);
    const pid = await l.run('builtin echo $$', 20_000);
    await expect(l.run('sleep 2', 200)).rejects.toBeInstanceOf(BackendError);
    expect(await l.run('builtin echo $$', 60_000)).toBe(pid);
  });

  it('urgent requests go ahead of queued ones', async () => {
    const l = lane();
    await l.run(':', 20_000);
    const order: string[] = [];
    const busy = l.run('sleep 1', 60_000);
    const normal = l.run('builtin echo normal', 60_000).then((o) => order.push(o.trim()));
    const urgent = l.run('builtin echo urgent', 60_000, true).then((o) => order.push(o.trim()));
    await Promise.all([busy, normal, urgent]);
    expect(order).toEqual(['urgent', 'normal']);
  });

  it('a queued request whose reason is gone when its turn comes (a late ^C) is dropped, not run', async () => {
    const l = lane();
    await l.run('X=before', 20_000);
    let commandEnded = false;
    const busy = l.run('sleep 1', 60_000);
    const stale = l.run('X=stale; builtin echo ran', 60_000, true, () => !commandEnded);
    const fresh = l.run('builtin echo kept', 60_000, true, () => true);
    commandEnded = true; // e.g. the shell answered while the ^C waited behind a slow kill
    await busy;
    expect(await stale).toBe('');
    expect(await fresh).toBe('kept\n');
    expect(await l.run('builtin echo $X', 20_000)).toBe('before\n');
  });

  it('a closed lane fails its queue with a BackendError', async () => {
    const l = lane();
    await l.run(':', 20_000);
    const queued = l.run('sleep 600', 60_000);
    await l.close();
    await expect(queued).rejects.toBeInstanceOf(BackendError);
    await expect(l.run(':', 1_000)).rejects.toThrow(/closed/);
  });

  it('a discarded bash is handed to onDiscard, which can kill it and what it runs', async () => {
    const killer = lane();
    const l = new ControlLane({
      openChannel: execChannelOpener(container),
      name: 'discarding lane',
      initScript: ':',
      onDiscard: (pid) => void killer.run(`builtin kill -9 -- -${pid}`, 20_000).catch(() => undefined),
    });
    lanes.push(l);
    await expect(l.run('sleep 777', 1_000)).rejects.toBeInstanceOf(BackendError);
    let ps = '';
    for (let i = 0; i < 200 && /sleep 777/.test((ps = (await execIn(docker, container.id, ['ps', '-eo', 'args'])).out)); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(ps).not.toMatch(/sleep 777/);
  });
});
