/**
 * Acquires on a full cluster, through real gateways and nodes: they wait and are served within their
 * acquire_timeout, never twice, in arrival order within a gateway whichever node frees first; a
 * client that leaves its waiting acquire leaves no waiter and no lease on any node, even when a node
 * grants it at the instant of the cut (the lease is released, not left to the idle reclaim); a
 * timeout gives the standalone broker's 503. States are read from the nodes' records, as the gateways see them.
 *
 * Waiting, placement and cuts are the gateways' and the nodes' pools', whatever shells the nodes run:
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { useTestCluster, CLIENT_TOKEN, CLUSTER_TOKEN, SESSIONS_PER_NODE, nodeOf } from '../helpers/cluster';
import { call } from '../../devtools/clusterProcs';
import { BrokerProcess } from '../../devtools/brokerProcess';
import { eventually, metricValue, testBackend, track, type HttpResult } from '../helpers/broker';
import { answerOf } from '../../devtools/httpCall';

// Nodes hold a waiting acquire as long as the callers ask (their own cap above the tests' timeouts).
const cluster = useTestCluster(['n1', 'n2'], 2, () => ({ BROKER_ACQUIRE_TIMEOUT: '120', BROKER_SESSION_IDLE_TIMEOUT: '3600' }));
const TOTAL = 2 * SESSIONS_PER_NODE;
const WAIT = { acquire_timeout: 90 };

/** Acquires waiting in each node's queue, from the records a gateway sees. */
async function waitingByNode(gateway: BrokerProcess): Promise<Record<string, number>> {
  const health = await cluster.health(gateway);
  return Object.fromEntries(health.nodes.map((n) => [n.node_id, (n.pools.default as { waiting?: number }).waiting ?? 0]));
}

async function untilWaiting(total: number, gateway = cluster.gateways[0]): Promise<Record<string, number>> {
  let last: Record<string, number> = {};
  await eventually(
    async () => {
      last = await waitingByNode(gateway);
      return Object.values(last).reduce((a, b) => a + b, 0) === total;
    },
    30_000,
    () => `${total} acquire(s) waiting on the nodes (last: ${JSON.stringify(last)})`,
  );
  return last;
}

/** broker_gateway_acquires_waiting of the default pool on `gateway`'s /metrics. */
async function waitingOn(gateway: BrokerProcess): Promise<number> {
  const r = await cluster.call(gateway, 'GET', '/metrics');
  expect(r.status).toBe(200);
  return metricValue(r.text, 'broker_gateway_acquires_waiting', { pool: 'default' });
}

/** Every session of the cluster leased: the ids, by node. */
async function holdAll(): Promise<Map<string, string[]>> {
  const byNode = new Map<string, string[]>();
  for (let i = 0; i < TOTAL; i++) {
    const r = await cluster.call(cluster.gateways[0], 'POST', '/session/acquire', {});
    expect(r.status).toBe(200);
    const id = r.json.session_id as string;
    byNode.set(nodeOf(id), [...(byNode.get(nodeOf(id)) ?? []), id]);
  }
  expect([...byNode.values()].map((ids) => ids.length)).toEqual([SESSIONS_PER_NODE, SESSIONS_PER_NODE]);
  return byNode;
}

async function release(id: string): Promise<void> {
  expect((await cluster.call(cluster.gateways[1], 'POST', `/session/${id}/release`)).json).toEqual({ status: 'released' });
}

/** An acquire its client can walk away from. */
async function abortableAcquire(gateway: BrokerProcess, body: unknown, signal: AbortSignal): Promise<HttpResult> {
  const res = await request(`${gateway.url}/session/acquire`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_TOKEN}` },
    signal,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  return answerOf(res);
}

/** Every node back to its whole pool free, with no lease and nobody waiting, as each node's own /health says. */
async function allFreeNoLease(): Promise<void> {
  for (const [id, node] of cluster.nodes) {
    let last: unknown;
    await eventually(
      async () => {
        const h = (last = (await call(node.url, 'GET', '/health')).json);
        return h.in_use_sessions === 0 && h.available_sessions === SESSIONS_PER_NODE && h.queue_length === 0;
      },
      30_000,
      () => `node ${id} to hold no lease and no waiter, every session free (last: ${JSON.stringify(last)})`,
    );
  }
  await cluster.waitMembers(['n1', 'n2']);
}

describe('acquires on a full cluster', () => {
  test('wait, and are served in arrival order within a gateway, whichever node frees first, each once', async () => {
    const [g1] = cluster.gateways;
    const held = await holdAll();
    const waiters: Array<ReturnType<typeof track<HttpResult>>> = [];
    for (let i = 0; i < TOTAL + 1; i++) {
      waiters.push(track(cluster.call(g1, 'POST', '/session/acquire', WAIT)));
      await untilWaiting(i + 1); // its arrival is known before the next one's
    }
    // The gateway counts the acquires it holds unanswered; the other gateway holds none.
    expect(await waitingOn(g1)).toBe(TOTAL + 1);
    expect(await waitingOn(cluster.gateways[1])).toBe(0);
    // Free one session at a time, the nodes in turn: the oldest waiting acquire gets each.
    const frees = [held.get('n2')![0], held.get('n1')![0], held.get('n2')![1], held.get('n1')![1]];
    const served: string[] = [];
    for (let k = 0; k < frees.length; k++) {
      await release(frees[k]);
      await eventually(() => waiters.filter((w) => w.settled()).length === k + 1, 30_000, `acquire ${k} to be served`);
      expect(waiters.map((w) => w.settled())).toEqual(waiters.map((_, i) => i <= k));
      const got = await waiters[k].promise;
      expect(got.status).toBe(200);
      served.push(got.json.session_id as string);
    }
    // The last one gets the first freed again.
    await release(served[0]);
    const last = await waiters[TOTAL].promise;
    expect(last.status).toBe(200);
    served.push(last.json.session_id as string);
    expect(new Set(served).size).toBe(served.length);
    for (const id of served.slice(1)) {
      expect((await cluster.call(g1, 'POST', `/session/${id}/execute`, { command: 'echo ok' })).json.stdout).toBe('ok\n');
      await release(id);
    }
    await allFreeNoLease();
    expect(await waitingOn(g1)).toBe(0);
  }, 240_000);

  test('a node that frees while the acquire waits on another serves it: the other cancels its waiter', async () => {
    const [, g2] = cluster.gateways;
    const held = await holdAll();
    const waiter = cluster.call(g2, 'POST', '/session/acquire', WAIT);
    const waiting = await untilWaiting(1, g2);
    const parkedOn = Object.keys(waiting).find((id) => waiting[id] === 1)!;
    const other = parkedOn === 'n1' ? 'n2' : 'n1';
    await release(held.get(other)![0]);
    const got = await waiter;
    expect(got.status).toBe(200);
    expect(nodeOf(got.json.session_id)).toBe(other);
    await untilWaiting(0, g2);
    for (const id of [...held.get(parkedOn)!, held.get(other)![1], got.json.session_id as string]) await release(id);
    await allFreeNoLease();
  }, 240_000);

  test('more concurrent acquires than sessions, through both gateways: every one served within its timeout, none twice', async () => {
    const ids: string[] = [];
    let holding = 0;
    let most = 0;
    const episode = async (i: number): Promise<void> => {
      const r = await cluster.call(cluster.gateways[i % 2], 'POST', '/session/acquire', WAIT);
      expect(r.status).toBe(200);
      const id = r.json.session_id as string;
      ids.push(id);
      most = Math.max(most, ++holding);
      expect((await cluster.call(cluster.gateways[(i + 1) % 2], 'POST', `/session/${id}/execute`, { command: `echo ${i}` })).json.stdout).toBe(`${i}\n`);
      holding--;
      await release(id);
    };
    await Promise.all(Array.from({ length: 3 * TOTAL }, (_, i) => episode(i)));
    expect(new Set(ids).size).toBe(3 * TOTAL);
    expect(most).toBeLessThanOrEqual(TOTAL);
    await allFreeNoLease();
  }, 240_000);

  test('clients that walk away from their waiting acquires leave no waiter and no lease', async () => {
    const held = await holdAll();
    const controller = new AbortController();
    const gone = [0, 1, 2, 3, 4].map((i) => abortableAcquire(cluster.gateways[i % 2], WAIT, controller.signal).catch(() => 'left'));
    await untilWaiting(5);
    controller.abort();
    expect(await Promise.all(gone)).toEqual(['left', 'left', 'left', 'left', 'left']);
    // The gateways cut their calls; the nodes drop those waiters.
    await untilWaiting(0);
    for (const id of [...held.values()].flat()) await release(id);
    await allFreeNoLease();
  }, 240_000);

  /** Leases the nodes reclaimed without a release, all reasons (broker_sessions_reclaimed_total on each node's /metrics). */
  async function reclaimedOnNodes(): Promise<number> {
    let sum = 0;
    for (const node of cluster.nodes.values()) {
      const r = await call(node.url, 'GET', '/metrics', undefined, { 'x-broker-cluster-token': CLUSTER_TOKEN });
      expect(r.status).toBe(200);
      sum += metricValue(r.text, 'broker_sessions_reclaimed_total');
    }
    return sum;
  }

  /** A release straight to the node that holds `id`, as a gateway sends it. */
  async function releaseOnNode(id: string): Promise<void> {
    const r = await call(cluster.nodes.get(nodeOf(id))!.url, 'POST', `/session/${id}/release`, undefined, { 'x-broker-cluster-token': CLUSTER_TOKEN });
    expect(r.json).toEqual({ status: 'released' });
  }

  // How each round's clients leave against the release of every session. Each client leaves in the
  // same turn as the releases are sent, or before: no answer can have reached it, so every session
  // a node grants is one the gateways must give back. A release straight to a node grants there
  // about when the gateway's cut arrives (one hop against two), one through a gateway about with it.
  const cutsAgainstFrees = {
    'before the releases': (ids: string[], cutAll: () => void) => {
      cutAll();
      return Promise.all(ids.map(release));
    },
    'as the releases go through a gateway': (ids: string[], cutAll: () => void) => {
      const freeing = Promise.all(ids.map(release));
      cutAll();
      return freeing;
    },
    'as the releases go straight to the nodes': (ids: string[], cutAll: () => void) => {
      const freeing = Promise.all(ids.map(releaseOnNode));
      cutAll();
      return freeing;
    },
  };

  test.each(Object.keys(cutsAgainstFrees) as Array<keyof typeof cutsAgainstFrees>)(
    'clients that leave their waiting acquires %s: every session granted meanwhile is released at once, none reclaimed',
    async (how) => {
      const reclaimedBefore = await reclaimedOnNodes();
      const held = await holdAll();
      // Timed acquires and untimed ones (the gateway's default timeout), through both gateways.
      const controllers = Array.from({ length: TOTAL + 2 }, () => new AbortController());
      const waiters = controllers.map((c, i) => abortableAcquire(cluster.gateways[i % 2], i % 2 === 0 ? WAIT : {}, c.signal).catch(() => 'left'));
      await untilWaiting(controllers.length);
      await cutsAgainstFrees[how]([...held.values()].flat(), () => controllers.forEach((c) => c.abort()));
      expect(await Promise.all(waiters)).toEqual(controllers.map(() => 'left'));
      // Idle leases are reclaimed only after an hour here: a lease left behind fails this wait.
      await allFreeNoLease();
      await untilWaiting(0);
      expect(await reclaimedOnNodes()).toBe(reclaimedBefore);
      // Every cut went through its node (none fell back to closing the call).
      for (const gateway of cluster.gateways) expect(gateway.output).not.toContain('could not be cut through its node');
    },
    240_000,
  );

  const onLocalShells = testBackend === 'local' ? test : test.skip;
  onLocalShells('a client that walks away while its acquire runs its startup commands leaves no lease on the node', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-abandoned-'));
    try {
      const controller = new AbortController();
      const startup = [`touch ${dir}/started; while [ ! -e ${dir}/go ]; do sleep 0.02; done`];
      const gone = abortableAcquire(cluster.gateways[0], { startup_commands: startup }, controller.signal).catch(() => 'left');
      await eventually(() => fs.existsSync(path.join(dir, 'started')), 30_000, 'the startup command to run');
      controller.abort();
      expect(await gone).toBe('left');
      // The lease is ready only now, its client long gone: the node gives it back at once.
      fs.writeFileSync(path.join(dir, 'go'), '');
      await allFreeNoLease();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);

  test("an acquire_timeout that passes gives the standalone broker's 503, and leaves no waiter", async () => {
    const held = await holdAll();
    const r = await cluster.call(cluster.gateways[1], 'POST', '/session/acquire', { acquire_timeout: 1 });
    expect(r.status).toBe(503);
    expect(r.text).toBe('{"detail":"No session available within 1 seconds","code":"pool_exhausted"}');
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    await untilWaiting(0);
    for (const id of [...held.values()].flat()) await release(id);
    await allFreeNoLease();
  }, 240_000);
});
