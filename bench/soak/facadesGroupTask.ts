/**
 * The group sandboxes' and the tasks' episodes in the mixed load, each checked exactly:
 *  - group sandbox: started in the run's group (a container of its own, a loop-mounted disk), two
 *    bash actions on its own API (a state set, then read back), stopped;
 *  - task: a sandbox cloning the repo with a prompt; the stub model asks for `bash cat README.md`,
 *    the agent runs it, the model answers with the prompt's token; the coding stream shows the tool's
 *    result and the final answer; the task ended.
 * Every end (stop, delete) is sent uncut, so nothing is left registered.
 */
import { bashToEnd } from '../../devtools/groupClient';
import { SseReader, type StreamEnvelope } from '../../devtools/taskStreams';
import { checked, type FacadeCtx } from './facades';
import { TASK_README, TASK_REPO } from './mixFixtures';
import type { Random } from './random';
import { Unexpected } from './tally';

/** A group sandbox's size: small (a soak runs many at once on a small machine). */
const COMPUTE = { cpu_cores: 0.25, ram_gb: 0.125, disk_gb: 0.05 };
/** Bounds on a facade episode's waits: far above their latency at the sized load. */
const ACTION_WAIT_MS = 120_000;
const TURN_WAIT_MS = 180_000;

export async function groupEpisode(c: FacadeCtx, rnd: Random): Promise<void> {
  await checked(c.tally, 'group sandbox episode', async () => {
    const id = `soak-${rnd.token()}`;
    const started = await c.http.post('/sandbox/start', { id, compute_resources: COMPUTE });
    const url = started.body?.sandbox_url;
    if (started.status !== 200 || typeof url !== 'string') throw new Unexpected(`group sandbox start: HTTP ${started.status}`, JSON.stringify(started.body).slice(0, 300));
    try {
      const t = rnd.token();
      const set = await bashToEnd(url, `export SOAK_G=g${t}; echo set`, ACTION_WAIT_MS);
      if (set.stdout !== 'set\n' || set.exit_code !== 0) throw new Unexpected('group sandbox action: wrong observation', JSON.stringify(set).slice(0, 300));
      const read = await bashToEnd(url, 'echo "$SOAK_G"', ACTION_WAIT_MS);
      if (read.stdout !== `g${t}\n` || read.exit_code !== 0) throw new Unexpected('group sandbox action: state not kept', JSON.stringify(read).slice(0, 300));
    } finally {
      const stopped = await c.http.end('POST', '/sandbox/stop', { id });
      if (stopped.status !== 200 || stopped.body?.status !== 'stopped') c.tally.error(`group sandbox stop: HTTP ${stopped.status}`, JSON.stringify(stopped.body).slice(0, 300));
    }
  });
}

const finalTurn = (e: StreamEnvelope): boolean => e.event.type === 'turn_end' && e.event.message?.stopReason !== 'toolUse';

export async function taskEpisode(c: FacadeCtx, rnd: Random): Promise<void> {
  await checked(c.tally, 'task episode', async () => {
    const t = rnd.token();
    const created = await c.http.post('/sandboxes', { repo: TASK_REPO, prompt: `soak task ${t}: read the readme` });
    const id = created.body?.id;
    if (created.status !== 201 || typeof id !== 'string') throw new Unexpected(`task create: HTTP ${created.status}`, JSON.stringify(created.body).slice(0, 300));
    let coding: SseReader | null = null;
    try {
      coding = await SseReader.open(`${c.url}/sandboxes/${id}/stream/coding`);
      if (coding.status !== 200) throw new Unexpected(`task coding stream: HTTP ${coding.status}`, '');
      const events = await coding.until((es) => es.some(finalTurn), 'the final answer', TURN_WAIT_MS);
      const answer = JSON.stringify(events.find(finalTurn)?.event.message ?? null);
      const tool = events.find((e) => e.event.type === 'tool_execution_end')?.event;
      if (!answer.includes(`Done ${t}`)) throw new Unexpected('task: wrong final answer', answer.slice(0, 300));
      if (tool?.toolName !== 'bash' || tool.isError !== false || !JSON.stringify(tool.result).includes(TASK_README.trim())) {
        throw new Unexpected("task: wrong tool result", JSON.stringify(tool ?? null).slice(0, 300));
      }
    } finally {
      await coding?.close();
      const ended = await c.http.end('DELETE', `/sandboxes/${id}`);
      if (ended.status !== 200 || ended.body?.status !== 'terminated') c.tally.error(`task delete: HTTP ${ended.status}`, JSON.stringify(ended.body).slice(0, 300));
    }
  });
}
