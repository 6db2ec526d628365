/**
 * Workspace healing (local: /proc): a workspace whose pool slot is lost moves to a new one. On the local
 * backend a slot is lost when its pool shell dies (the slot is rebuilt, its directory removed), so
 * the test kills that shell from outside: the running job ends with an exit event that says why, a
 * `workspace_moved` event follows, and the workspace's seq counter and viewers carry on.
 * @backend local
 */
import fs from 'node:fs';
import { startTestBroker, waitFullPool, type TestBroker } from '../helpers/broker';
import { pidsWithEnvPrefix } from '../../devtools/procs';
import { openEvents } from '../helpers/workspaceClient';

const TAG = 'BROKER_SESSION_TAG=';

function tagOf(pid: number): string {
  const entry = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').find((e) => e.startsWith(TAG));
  if (!entry) throw new Error(`process ${pid} has no ${TAG}`);
  return entry.slice(TAG.length);
}

describe('workspace: a lost slot (local: /proc)', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '3' });
  }, 120_000);
  afterAll(async () => {
    await tb?.close();
  }, 60_000);

  it("moves to a new slot when its slot's shell dies, keeping its events and viewers", async () => {
    const first = await tb.post('/api/execute', { command: 'echo pid=$$' });
    const terminalPid = Number(/pid=(\d+)/.exec(first.json.stdout)?.[1]);
    // The terminal's tag is <instance>-<slot>-t<n>; the slot's pool shell carries <instance>-<slot>-<n>.
    const slotPrefix = tagOf(terminalPid).replace(/-t\d+$/, '-');
    const poolShells = pidsWithEnvPrefix(`${TAG}${slotPrefix}`).filter((pid) => !/-t\d+$/.test(tagOf(pid)));
    expect(poolShells).toHaveLength(1);

    const events = await openEvents(tb);
    try {
      const running = await tb.post('/api/execute', { command: 'sleep 300', wait: 1 });
      expect(running.json.returncode).toBeNull();
      process.kill(poolShells[0], 'SIGKILL');

      const exit = await events.waitFor((e) => e.type === 'exit' && e.job_id === running.json.job_id, "the lost job's exit event");
      expect(exit.returncode).toBeNull();
      expect(exit.reason).toMatch(/slot was lost/);
      const moved = await events.waitFor((e) => e.type === 'workspace_moved', 'the workspace_moved event');
      expect(moved.workdir).not.toBe(moved.previous_workdir);

      const after = await tb.post('/api/execute', { command: 'echo pid=$$; pwd' });
      expect(after.json.returncode).toBe(0);
      expect(after.json.stdout).not.toContain(`pid=${terminalPid}\n`);
      expect(after.json.stdout).toContain(String(moved.workdir).replace(/\/$/, ''));
      await events.waitFor((e) => e.type === 'exit' && e.job_id === after.json.job_id, 'the exit event after the move');
      const seqs = events.events.map((e) => e.seq_id!);
      expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
      await waitFullPool(tb, 60_000, { inUse: 1 });
    } finally {
      events.close();
    }
  });
});
