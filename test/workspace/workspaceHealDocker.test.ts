/**
 * A workspace whose container is killed under it heals. The job running then ends with an
 * exit event that says why, the workspace takes a new slot and a fresh shell there and says so in a
 * `workspace_moved` event, and it keeps its seq counter, its ring and its viewers (the same sockets
 * go on receiving). A real container kill; every wait is on a state, with generous bounds.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, testDeployment, waitFullPool, type TestBroker } from '../helpers/broker';
import { describeDocker } from '../helpers/dockerSuite';
import { containerExists, removeLabelledContainers, untilRunningIn } from '../helpers/dockerFaults';
import { QUICK_HEALTH_POOL, watchWorkspace, workspaceContainer } from '../helpers/workspaceClient';

const LONG = 90_000;
jest.setTimeout(300_000);
const DEPLOYMENT = testDeployment(`ws-heal-${process.pid}`);
const docker = new Dockerode();

describeDocker('docker: a workspace moves to a new slot when its container fails', () => {
  let tb: TestBroker | null = null;

  afterEach(async () => {
    await tb?.close().catch(() => undefined);
    tb = null;
  });

  afterAll(async () => {
    await removeLabelledContainers(docker, DEPLOYMENT);
  });

  it('a container killed under a running job: clear exit, a moved event, same seq counter and viewers, a working shell', async () => {
    const b = (tb = await startTestBroker({
      ...QUICK_HEALTH_POOL,
      BROKER_DEPLOYMENT: DEPLOYMENT,
    }));
    await b.waitAllAvailable(LONG);
    const oldId = await workspaceContainer(b);
    const {
      first,
      viewers: [events],
      terminal,
    } = await watchWorkspace(b);
    try {
      await b.post('/api/execute', { command: 'cd /tmp && export KEEP=gone' });
      const running = await b.post('/api/execute', { command: 'sleep 300; echo finished', wait: 1 });
      expect(running.json.returncode).toBeNull();
      const jobId = running.json.job_id as string;
      await untilRunningIn(docker, oldId, 'sleep 300', LONG);

      await docker.getContainer(oldId).kill();

      const exit = await events.waitFor((e) => e.type === 'exit' && e.job_id === jobId, "the lost job's exit event", LONG);
      expect(exit.returncode).toBeNull();
      expect(exit.reason).toMatch(/slot was lost/);
      const moved = await events.waitFor((e) => e.type === 'workspace_moved', 'the workspace_moved event', LONG);
      expect(moved.reason).toMatch(/slot was lost/);
      expect(moved.workdir).not.toBe(moved.previous_workdir);
      expect(moved.seq_id!).toBeGreaterThan(exit.seq_id!);

      // A fresh shell elsewhere: the old container's state is gone, the new one answers.
      const after = await b.post('/api/execute', { command: 'echo "keep=$KEEP" host=$HOSTNAME; pwd' });
      expect(after.status).toBe(200);
      expect(after.json.returncode).toBe(0);
      expect(after.json.stdout).toContain('keep= ');
      expect(after.json.stdout).not.toContain(oldId.slice(0, 12));
      expect(after.json.stdout).toContain(String(moved.workdir).replace(/\/$/, ''));
      expect(after.json.stdout).not.toContain('finished');

      // The same sockets got it all, in one gap-free seq order from before the kill to after it.
      await events.waitFor((e) => e.type === 'exit' && e.job_id === after.json.job_id, 'the exit event after the move');
      const seqs = events.events.map((e) => e.seq_id!);
      expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
      expect(seqs[0]).toBe(first.seq_id);
      await terminal.waitForText('keep= host=');
      expect(terminal.socket.readyState).toBe(terminal.socket.OPEN);

      // The pool heals around it: the old container replaced, the workspace holding one slot.
      await eventually(async () => !(await containerExists(docker, oldId)), LONG, 'the killed container removed');
      await waitFullPool(b, LONG, { inUse: 1 });
    } finally {
      events.close();
      terminal.close();
    }
  });
});
