/**
 * Fault on the workspace API: the workspace's bash killed from outside (kill -9 through the engine)
 * while a job runs and viewers watch. The running job ends with an exit event, every viewer gets a
 * `shell_restarted` event that says why, the same sockets go on receiving from the fresh shell, the
 * next command works in the workspace's own directory, and the pool stays whole: only the shell was
 * lost, so no container is replaced. Every wait is on a state.
 * @backend docker
 */
import Dockerode from 'dockerode';
import { eventually, startTestBroker, testDeployment, waitFullPool, type TestBroker } from '../helpers/broker';
import { describeDocker, sessionIsolation } from '../helpers/dockerSuite';
import { execIn, poolContainerIds, removeLabelledContainers } from '../helpers/dockerFaults';
import { QUICK_HEALTH_POOL, watchWorkspace, workspaceContainer, type Event } from '../helpers/workspaceClient';

const LONG = 90_000;
jest.setTimeout(300_000);
const DEPLOYMENT = testDeployment(`ff-workspace-${process.pid}`);
const docker = new Dockerode();

describeDocker("docker: a workspace's bash killed while viewers watch", () => {
  let tb: TestBroker | null = null;

  afterAll(async () => {
    await tb?.close();
    await removeLabelledContainers(docker, DEPLOYMENT);
  });

  it('the job ends, every viewer gets shell_restarted, the same sockets see the fresh shell, the pool stays whole', async () => {
    const b = (tb = await startTestBroker({
      ...QUICK_HEALTH_POOL,
      BROKER_DEPLOYMENT: DEPLOYMENT,
    }));
    await b.waitAllAvailable(LONG);
    const containers = poolContainerIds(b);
    const cid = await workspaceContainer(b);
    const { viewers, terminal } = await watchWorkspace(b, 2);
    try {
      const workdir = (await b.post('/api/execute', { command: 'pwd' })).json.stdout as string;
      const ownPid = (await b.post('/api/execute', { command: 'echo $$' })).json.stdout.trim() as string;
      expect(ownPid).toMatch(/^\d+$/);
      const running = await b.post('/api/execute', { command: 'echo started; sleep 300; echo finished', wait: 1 });
      expect(running.json.returncode).toBeNull();
      const jobId = running.json.job_id as string;
      // The job's parent is the workspace's bash, by its pid in the container.
      let pid = '';
      await eventually(
        async () => {
          const sleeper = (await execIn(docker, cid, ['ps', '-o', 'ppid,args'])).out.split('\n').find((l) => / sleep 300$/.test(l));
          pid = sleeper?.trim().split(/\s+/)[0] ?? '';
          return pid !== '';
        },
        LONG,
        'sleep 300 running in the container',
      );
      // Isolated, bash runs in its session's pid namespace, where $$ is its pid there, not the container's.
      if (sessionIsolation) expect(pid).not.toBe(ownPid);
      else expect(pid).toBe(ownPid);

      const killed = await execIn(docker, cid, ['kill', '-9', pid]);
      expect(killed.code).toBe(0);

      for (const viewer of viewers) {
        const exit = await viewer.waitFor((e) => e.type === 'exit' && e.job_id === jobId, "the killed job's exit event", LONG);
        expect(exit.returncode).toBe(137);
        const restarted = await viewer.waitFor((e) => e.type === 'shell_restarted', 'the shell_restarted event', LONG);
        expect(restarted).toMatchObject({ exit_code: 137 });
        expect(typeof restarted.reason).toBe('string');
        expect(restarted.seq_id!).toBeGreaterThan(exit.seq_id!);
      }
      // The record stays in the workspace's log for whoever looks later.
      const logs = (await b.get('/api/workspace/logs?offset=-50&limit=50')).json as Event[];
      expect(logs.some((e) => e.type === 'shell_restarted')).toBe(true);

      // A fresh shell, in the workspace's own directory, in the same container.
      const after = await b.post('/api/execute', { command: 'echo fresh host=$HOSTNAME; pwd' });
      expect(after.status).toBe(200);
      expect(after.json.returncode).toBe(0);
      expect(after.json.stdout).toBe(`fresh host=${cid.slice(0, 12)}\n${workdir}`);
      expect(after.json.stdout).not.toContain('finished');

      // The same sockets saw it all, in one gap-free seq order; the terminal shows the new shell's output.
      await viewers[0].waitFor((e) => e.type === 'exit' && e.job_id === after.json.job_id, 'the exit event after the restart');
      const seqs = viewers[0].events.map((e) => e.seq_id!);
      expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
      await terminal.waitForText('fresh host=');
      for (const s of [...viewers.map((v) => v.socket), terminal.socket]) expect(s.readyState).toBe(s.OPEN);

      // Only the shell died: the pool keeps its containers, whole, the workspace holding one slot.
      await waitFullPool(b, LONG, { inUse: 1 });
      expect(poolContainerIds(b)).toEqual(containers);
    } finally {
      for (const v of viewers) v.close();
      terminal.close();
    }
  });
});
