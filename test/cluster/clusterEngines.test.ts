/**
 * A cluster of real engines on one machine (the rig scripts/cluster.sh runs: devtools/clusterRig.ts):
 * a private etcd, a registry, 3 Docker engines (each a dockerd of its own, its own roots, socket and
 * bridge, pulling the nodes' image from the registry), 3 node brokers (one beside each engine) and 2
 * gateways. The pool contract through the gateways with sessions over the three nodes, each session's container found on the engine of the node its id
 * names; then, in order, the faults: a node's engine killed and restarted, the store stopped for
 * 30 s, a node killed with SIGKILL and restarted; last, a stop that leaves nothing behind, and the
 * machine's own engine and bridge as they were.
 *
 * The rig's engines are Docker engines:
 * @backend docker
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import Dockerode from 'dockerode';
import { ClusterRig } from '../../devtools/clusterRig';
import { TEST_RIG_PREFIX } from '../../devtools/rigState';
import { call, closeClients, type GatewayHealth } from '../../devtools/clusterProcs';
import { compiledEntry } from '../../devtools/brokerProcess';
import { nodeOf } from '../helpers/cluster';
import { describeDocker } from '../helpers/dockerSuite';
import { eventually, type HttpResult } from '../helpers/broker';

/** The nodes' image: the rig pushes it to its registry, and each engine pulls it from there. */
const IMAGE = process.env.BROKER_IMAGE ?? 'bash-broker-test:latest';
const NODES = 3;
/** Each node: one container of two sessions. */
const SESSIONS_PER_NODE = 2;
/** The nodes' lease TTL (the default BROKER_NODE_TTL): a dead node leaves the membership within it. */
const NODE_TTL_MS = 5_000;
/** Slack for a loaded CI machine of 2 cores: container starts, heartbeats, watches, /health polls. */
const SLACK_MS = 60_000;
/** How long the store stays away in its fault. */
const STORE_AWAY_MS = 30_000;
/** A test's bound: each waits on states, each wait bounded by SLACK_MS or the rig's own. */
const TEST_MS = 300_000;

let rig: ClusterRig | null = null;
/** Whether the machine's own engine had its bridge before the rig: the rig's engines must not take it away. */
const hadDocker0 = fs.existsSync('/sys/class/net/docker0');

function gateway(g: 1 | 2): string {
  return rig!.gatewayUrls[g - 1];
}

function post(g: 1 | 2, path: string, body?: unknown): Promise<HttpResult> {
  return call(gateway(g), 'POST', path, body, { authorization: `Bearer ${rig!.clientToken}` });
}

/** Sessions a test acquired and has not released: a test that fails half-way leaves them to afterEach. */
const held = new Set<string>();

async function acquire(g: 1 | 2, body: Record<string, unknown> = {}): Promise<string> {
  const r = await post(g, '/session/acquire', body);
  if (r.status !== 200) throw new Error(`acquire: ${r.status} ${r.text}`);
  held.add(r.json.session_id);
  return r.json.session_id as string;
}

async function run(g: 1 | 2, id: string, command: string): Promise<string> {
  const r = await post(g, `/session/${id}/execute`, { command });
  if (r.status !== 200) throw new Error(`execute on ${id}: ${r.status} ${r.text}`);
  return r.json.stdout as string;
}

async function release(g: 1 | 2, ids: Iterable<string>): Promise<void> {
  for (const id of ids) {
    expect((await post(g, `/session/${id}/release`)).status).toBe(200);
    held.delete(id);
  }
}

/** One lease on every node, by node id (the others acquired on the way are released). */
async function leaseOnEach(): Promise<Map<string, string>> {
  const kept = new Map<string, string>();
  const extra: string[] = [];
  for (let i = 0; i < NODES * SESSIONS_PER_NODE && kept.size < NODES; i++) {
    const id = await acquire(1);
    if (kept.has(nodeOf(id))) extra.push(id);
    else kept.set(nodeOf(id), id);
  }
  await release(1, extra);
  expect([...kept.keys()].sort()).toEqual(['n1', 'n2', 'n3']);
  return kept;
}

/** The node number an id names (`n2.…` is 2). */
function nodeNumber(id: string): number {
  return Number(nodeOf(id).slice(1));
}

/** The container a session's shell runs in, asked of the engine of the node its id names. */
async function containerOf(id: string): Promise<Dockerode.ContainerInfo> {
  const hostname = (await run(1, id, 'hostname')).trim();
  const { engine } = rig!.node(nodeNumber(id));
  const found = (await engine.docker.listContainers({ all: true })).filter((c) => c.Id.startsWith(hostname));
  expect(found).toHaveLength(1);
  return found[0];
}

/** Until both gateways' /health says what `want` wants of node `n`. */
async function waitNode(n: number, want: (node: GatewayHealth['nodes'][number] | undefined) => boolean, what: string, timeoutMs = SLACK_MS): Promise<void> {
  for (const g of [1, 2] as const) {
    let last: GatewayHealth | null = null;
    await eventually(
      async () => {
        last = await rig!.gatewayView(g);
        return want(last.nodes.find((node) => node.node_id === `n${n}`));
      },
      timeoutMs,
      () => `gateway g${g} to report node n${n} ${what} (last: ${JSON.stringify(last?.nodes)})`,
    );
  }
}

describeDocker('a cluster of 3 engines, 3 nodes and 2 gateways on one machine', () => {
  beforeAll(async () => {
    await ClusterRig.sweepAbandoned();
    rig = await ClusterRig.up({
      dir: `${os.tmpdir()}/${TEST_RIG_PREFIX}${process.pid}`,
      engines: NODES,
      gateways: 2,
      images: [IMAGE],
      entry: await compiledEntry(),
      // Not the script's default: a rig a person runs on this machine meanwhile keeps its addresses.
      subnetBase: '172.30',
      ownerPid: process.pid,
      nodeEnv: {
        BROKER_CONTAINERS: '1',
        BROKER_SESSIONS_PER_CONTAINER: String(SESSIONS_PER_NODE),
        // Checks every second: a lost engine is seen within a beat or two.
        BROKER_HEALTH_INTERVAL: '1',
        BROKER_ACQUIRE_TIMEOUT: '10',
      },
    });
  }, 600_000);

  // The faults run in order on one rig: after one that failed half-way, the next starts from a whole
  // rig (every part running, no lease held) and fails or passes on its own.
  afterEach(async () => {
    if (!rig) return;
    for (const id of held) await post(1, `/session/${id}/release`).catch(() => undefined);
    held.clear();
    if (!rig.runs('etcd')) await rig.startEtcd();
    for (const engine of rig.engines) if (engine.pid === null) await engine.start();
    for (let n = 1; n <= NODES; n++) if (!rig.runs(`n${n}`)) await rig.startNode(n);
    await rig.waitReady();
  }, TEST_MS);

  afterAll(async () => {
    const down = await rig?.down();
    rig = null;
    await closeClients();
    if (down && down.left.length > 0) throw new Error(`the rig left: ${down.left.join('; ')}`);
  }, 300_000);

  test('the pool contract through the gateways, sessions on all three nodes, each in a container on its own node\'s engine', async () => {
    const ids: string[] = [];
    for (let i = 0; i < NODES * SESSIONS_PER_NODE; i++) {
      const r = await post(i % 2 === 0 ? 1 : 2, '/session/acquire', {});
      expect(r.status).toBe(200);
      expect(Object.keys(r.json)).toEqual(['session_id']);
      ids.push(r.json.session_id);
    }
    const perNode = new Map<string, number>();
    for (const id of ids) perNode.set(nodeOf(id), (perNode.get(nodeOf(id)) ?? 0) + 1);
    expect(Object.fromEntries(perNode)).toEqual({ n1: SESSIONS_PER_NODE, n2: SESSIONS_PER_NODE, n3: SESSIONS_PER_NODE });

    for (const id of ids) {
      const n = nodeNumber(id);
      const container = await containerOf(id);
      const { engine, deployment } = rig!.node(n);
      expect(container.Labels['io.bash-broker.deployment']).toBe(deployment);
      expect(container.State).toBe('running');
      // On that engine's bridge, and on no other engine.
      expect(container.NetworkSettings.Networks.bridge?.IPAddress.startsWith(engine.subnetPrefix)).toBe(true);
      for (const other of rig!.engines.filter((e) => e !== engine)) expect(await other.containerIds()).not.toContain(container.Id);

      const r = await post(1, `/session/${id}/execute`, { command: `cd /tmp && X=${nodeOf(id)}` });
      expect(r.status).toBe(200);
      expect(Object.keys(r.json)).toEqual(['status', 'stdout', 'stderr', 'return_code']);
      // State persists between executes, whichever gateway carries them.
      expect(await run(2, id, 'echo "$PWD $X"')).toBe(`/tmp ${nodeOf(id)}\n`);
    }

    // Every session is leased: the next acquire waits, then answers as a standalone broker would.
    const full = await post(2, '/session/acquire', { acquire_timeout: 1 });
    expect(full.status).toBe(503);
    expect(full.json).toEqual({ detail: 'No session available within 1 seconds', code: 'pool_exhausted' });
    for (const id of ids) expect((await post(2, `/session/${id}/release`)).json).toEqual({ status: 'released' });
    await rig!.waitReady();
  }, TEST_MS);

  test('the script a person runs reports the same rig, every part up', () => {
    const out = execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', 'scripts/cluster-rig.ts', 'status', '--dir', rig!.dir], {
      cwd: path.resolve(__dirname, '..', '..'),
      encoding: 'utf8',
      timeout: 60_000,
    });
    const lines = out.trim().split('\n');
    // etcd, the registry, then each engine and node, then each gateway.
    expect(lines).toHaveLength(2 + 2 * NODES + 2);
    for (const line of lines) expect(line).toMatch(/^\S+( \S+)?\s+up\s/);
    for (const url of [...rig!.gatewayUrls, rig!.node(1).url, rig!.etcdEndpoint, `http://${rig!.registry}`]) expect(out).toContain(url);
  });

  test("the nodes' image came to each engine through the rig's registry, and the machine's engine keeps no name of it there", async () => {
    const ref = `${rig!.registry}/${IMAGE}`;
    for (const held of await Promise.all(rig!.engines.map((e) => e.docker.getImage(IMAGE).inspect()))) {
      expect(held.RepoTags).toEqual(expect.arrayContaining([IMAGE, ref]));
      expect(held.RepoDigests.some((d) => d.startsWith(`${rig!.registry}/`))).toBe(true);
    }
    expect((await new Dockerode().getImage(IMAGE).inspect()).RepoTags).not.toContain(ref);
  });

  test("a node's engine killed: the node reports unhealthy and none free, its sessions answer a clear error, no acquire goes there; the engine back, it serves again", async () => {
    const leases = await leaseOnEach();
    const doomed = leases.get('n2')!;
    await run(1, doomed, 'export KEEP=1');
    const oldContainer = (await containerOf(doomed)).Id;
    await run(1, leases.get('n1')!, 'export KEEP=1');

    await rig!.engines[1].stop('SIGKILL');
    await waitNode(2, (node) => node?.health === 'unhealthy' && node.pools.default.available === 0, 'unhealthy with no session free');

    // Its session is gone with its engine: 410 session_broken from the node, not a hang and not node_lost.
    const lost = await post(1, `/session/${doomed}/execute`, { command: 'echo $KEEP' });
    expect(lost.status).toBe(410);
    expect(lost.json.code).toBe('session_broken');
    // The other nodes' sessions go on.
    expect(await run(2, leases.get('n1')!, 'echo $KEEP')).toBe('1\n');
    expect(await run(2, leases.get('n3')!, 'echo up')).toBe('up\n');

    // The free sessions are n1's and n3's; with those taken, an acquire waits (on a healthy node) and ends 503.
    const placed = [await acquire(1, { acquire_timeout: 30 }), await acquire(2, { acquire_timeout: 30 })];
    expect(placed.map(nodeOf).sort()).toEqual(['n1', 'n3']);
    const full = await post(1, '/session/acquire', { acquire_timeout: 1 });
    expect(full.status).toBe(503);
    expect(full.json.code).toBe('pool_exhausted');
    await release(1, placed);

    await rig!.engines[1].start();
    // Its link to the registry came back with it: it pulls (the manifest; its layers are there).
    await rig!.engines[1].pull(rig!.registryRef(IMAGE), IMAGE);
    await waitNode(2, (node) => node?.health === 'healthy' && node.pools.default.available === SESSIONS_PER_NODE, 'healthy with its whole pool free');
    // A new container on the restarted engine; the killed one's is gone (the engine stopped it, the node removed it).
    const { engine, deployment } = rig!.node(2);
    await eventually(async () => !(await engine.containerIds()).includes(oldContainer), SLACK_MS, 'the old container removed from the restarted engine');
    const onEngine = await engine.docker.listContainers({ all: true });
    expect(onEngine.map((c) => [c.Labels['io.bash-broker.deployment'], c.State])).toEqual([[deployment, 'running']]);
    // The lost lease stays lost, and releases cleanly.
    expect((await post(2, `/session/${doomed}/execute`, { command: 'true' })).status).toBe(410);
    await release(2, leases.values());
    await rig!.waitReady();
    // Acquires reach n2 again.
    const again = await leaseOnEach();
    expect((await containerOf(again.get('n2')!)).Id).toBe(onEngine[0].Id);
    await release(1, again.values());
    await rig!.waitReady();
  }, TEST_MS);

  test('the store stopped for 30 s: the gateways route existing ids and place from the last membership; it heals when etcd returns', async () => {
    const leases = await leaseOnEach();
    for (const [node, id] of leases) await run(1, id, `export NODE=${node}`);
    // The last facts the gateways keep must be these (one session free on each node), not a record
    // taken while leaseOnEach held an extra one: placement goes by them for as long as the store is away.
    for (let n = 1; n <= NODES; n++) await waitNode(n, (node) => node?.pools.default.available === SESSIONS_PER_NODE - 1, 'with one session free');
    await rig!.stopEtcd();
    // A state, not a sleep: both gateways have gone 30 s without a heartbeat and still list every node.
    for (const g of [1, 2] as const) {
      let last: GatewayHealth | null = null;
      await eventually(
        async () => {
          last = await rig!.gatewayView(g);
          return !last.store_connected && last.nodes.length === NODES && last.nodes.every((n) => n.heartbeat_age_ms > STORE_AWAY_MS);
        },
        STORE_AWAY_MS + SLACK_MS,
        () => `gateway g${g} to keep every node ${STORE_AWAY_MS} ms without the store (last: ${JSON.stringify(last)})`,
      );
    }
    for (const [node, id] of leases) expect(await run(2, id, 'echo $NODE')).toBe(`${node}\n`);
    // One session is free on each node: acquires through either gateway still find all three.
    const placed = [await acquire(1, { acquire_timeout: 30 }), await acquire(2, { acquire_timeout: 30 }), await acquire(1, { acquire_timeout: 30 })];
    expect(placed.map(nodeOf).sort()).toEqual(['n1', 'n2', 'n3']);
    await release(2, [...placed, ...leases.values()]);

    await rig!.startEtcd();
    for (const g of [1, 2] as const) {
      let last: GatewayHealth | null = null;
      await eventually(
        async () => {
          last = await rig!.gatewayView(g);
          return last.store_connected && last.nodes.length === NODES && last.nodes.every((n) => n.heartbeat_age_ms < NODE_TTL_MS);
        },
        SLACK_MS,
        () => `gateway g${g} to see the store and fresh heartbeats again (last: ${JSON.stringify(last)})`,
      );
    }
    await rig!.waitReady();
    expect(rig!.registrations()).toHaveLength(NODES);
  }, TEST_MS);

  test("kill -9 of a node: its sessions answer 410 node_lost, the others go on, acquires land on the survivors; restarted, it sweeps its engine and rejoins", async () => {
    const leases = await leaseOnEach();
    const lostId = leases.get('n3')!;
    const leftBehind = (await containerOf(lostId)).Id;
    await run(1, leases.get('n1')!, 'export EPISODE=7');

    await rig!.kill9Node(3);
    const lost = await post(1, `/session/${lostId}/execute`, { command: 'true' });
    expect(lost.status).toBe(410);
    expect(Object.keys(lost.json)).toEqual(['detail', 'code']);
    expect(lost.json.code).toBe('node_lost');
    expect(lost.json.detail).toContain("node 'n3'");
    expect(await run(2, leases.get('n1')!, 'echo $EPISODE')).toBe('7\n');
    // Its container outlived it on its engine, which still runs.
    expect(await rig!.node(3).engine.containerIds()).toContain(leftBehind);

    await waitNode(3, (node) => node === undefined, 'gone from the membership', NODE_TTL_MS + SLACK_MS);
    const placed = [await acquire(1, { acquire_timeout: 30 }), await acquire(2, { acquire_timeout: 30 })];
    expect(placed.map(nodeOf).sort()).toEqual(['n1', 'n2']);
    await release(1, placed);

    await rig!.startNode(3);
    await waitNode(3, (node) => node?.health === 'healthy' && node.pools.default.available === SESSIONS_PER_NODE, 'back, healthy, with its whole pool free');
    // It swept what its predecessor left: one container of its deployment, a new one.
    const { engine, deployment } = rig!.node(3);
    const onEngine = await engine.docker.listContainers({ all: true });
    expect(onEngine.map((c) => [c.Labels['io.bash-broker.deployment'], c.State])).toEqual([[deployment, 'running']]);
    expect(onEngine[0].Id).not.toBe(leftBehind);
    const old = await post(2, `/session/${lostId}/execute`, { command: 'true' });
    expect(old.status).toBe(410);
    expect(old.json.detail).toMatch(/node 'n3', which restarted since it minted it/);
    await release(1, [leases.get('n1')!, leases.get('n2')!]);
    const again = await leaseOnEach();
    await release(1, again.values());
    await rig!.waitReady();
  }, TEST_MS);

  test('stopped, nothing is left: no container on any engine, no process, no registration, no mount, no bridge', async () => {
    const dir = rig!.dir;
    const { leftByMembers, left } = await rig!.down();
    rig = null;
    // The nodes removed their own containers and ended their registrations; the rig found nothing to remove after them.
    expect(leftByMembers).toEqual([]);
    expect(left).toEqual([]);
    expect(fs.existsSync(dir)).toBe(false);
    expect(fs.existsSync('/sys/class/net/docker0')).toBe(hadDocker0);
    expect(fs.readdirSync('/sys/class/net').filter((link) => link.startsWith('bbr-'))).toEqual([]);
    await new Dockerode().ping(); // the machine's engine, untouched
  }, TEST_MS);
});
