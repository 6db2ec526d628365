/**
 * A task sandbox through a cluster of real processes (a private etcd, two Docker nodes, two
 * gateways): created through a gateway on the node its id names, its two SSE streams read through
 * either gateway as the events come, resumed by cursor through the other, a follow-up prompt, and
 * its end. Task sandboxes need Docker: on the local project the suite says so and does nothing.
 *
 * Task sandboxes are Docker's alone:
 * @backend docker
 */
import { describeDocker } from '../helpers/dockerSuite';
import { lastUserText } from '../../devtools/stubLlm';
import { SseReader } from '../../devtools/taskStreams';
import { taskFixture, type TaskFixture } from '../helpers/taskSuite';
import { useTestCluster, CLIENT_TOKEN, nodeOf } from '../helpers/cluster';
import type { BrokerProcess } from '../../devtools/brokerProcess';

jest.setTimeout(240_000);

const AUTH = { authorization: `Bearer ${CLIENT_TOKEN}` };
/** The task settings of the fixture a node takes (its deployment and pool are the cluster's). */
const TASK_SETTINGS = ['BROKER_TASK_IMAGE', 'BROKER_GIT_BASE_URL', 'BROKER_ANTHROPIC_BASE_URL', 'BROKER_TASK_SOCKET_DIR', 'BROKER_TASK_MODEL', 'ANTHROPIC_API_KEY'];

describeDocker('a task sandbox through a cluster of 2 Docker nodes and 2 gateways', () => {
  let fx: TaskFixture;
  const readers: SseReader[] = [];

  beforeAll(async () => {
    fx = await taskFixture('cluster');
    fx.stub.reply = (req) => ({ text: [`You said: ${lastUserText(req)}`] });
  });
  const cluster = useTestCluster(['n1', 'n2'], 2, () => Object.fromEntries(TASK_SETTINGS.map((name) => [name, (fx.env as Record<string, string>)[name]])));
  afterAll(async () => {
    await Promise.all(readers.map((r) => r.close()));
    await fx?.close();
  });

  async function open(gateway: BrokerProcess, id: string, stream: 'control' | 'coding', query = ''): Promise<SseReader> {
    const reader = await SseReader.open(`${gateway.url}/sandboxes/${id}/stream/${stream}${query}`, AUTH);
    readers.push(reader);
    expect(reader.status).toBe(200);
    return reader;
  }

  test("created through a gateway on the node its id names; its streams through both gateways, resumed by cursor, a follow-up prompt, its end", async () => {
    const [g1, g2] = cluster.gateways;
    const created = await cluster.call(g1, 'POST', '/sandboxes', { name: 'clustered', repo: 'acme/demo-repo', prompt: 'hello cluster' });
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    expect(['n1', 'n2']).toContain(nodeOf(id));
    expect((await cluster.call(g2, 'GET', `/sandboxes/${id}`)).json).toMatchObject({ id, name: 'clustered', status: 'running' });

    const control = await open(g2, id, 'control');
    const coding = await open(g1, id, 'coding');
    await control.untilType('prompt_queued');
    await coding.untilType('message_end', (e) => JSON.stringify(e.event).includes('You said: hello cluster'));
    expect(control.types().slice(0, 4)).toEqual(['sandbox_ready', 'repo_cloned', 'init_complete', 'prompt_queued']);

    // Resumed after a cursor through the other gateway: the rest, nothing twice.
    const resumed = await open(g1, id, 'control', '?cursor=2');
    await resumed.until((es) => es.length >= 2, 'the events after cursor 2');
    expect(resumed.envelopes.slice(0, 2)).toEqual(control.envelopes.slice(2, 4));

    // A follow-up prompt through the other gateway streams its answer to the open readers as it comes.
    expect((await cluster.call(g2, 'POST', `/sandboxes/${id}/prompt`, { message: 'and again' })).status).toBe(202);
    await coding.untilType('message_end', (e) => JSON.stringify(e.event).includes('You said: and again'));

    const ended = await cluster.call(g1, 'DELETE', `/sandboxes/${id}`);
    expect(ended.json.status).toBe('terminated');
    await control.finished();
    expect(control.types().pop()).toBe('sandbox_terminated');
  });
});
