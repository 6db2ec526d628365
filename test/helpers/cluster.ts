/**
 * A real cluster for tests: a private etcd, node brokers (the test's backend, local or Docker on the
 * one engine; each its own deployment, working root and process) and gateways, every one a process of its own on loopback port 0, under a
 * key prefix of this test's own. `stop()` ends all of it and says what was left.
 *
 * Gateways and nodes speak mutual TLS (BROKER_CLUSTER_CA/CERT/KEY, certificates made with the
 * store's, etcdPki.ts) unless `nodeTls: false`: so every cluster suite runs over it. The test's own
 * calls straight to a node present the gateways' certificate (clusterProcs.ts presentToNodes).
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { TestEtcd } from '../../devtools/etcd';
import { call, closeClients, presentToNodes, type GatewayHealth } from '../../devtools/clusterProcs';
import { BrokerProcess } from '../../devtools/brokerProcess';
import { eventually, testBackend, testDeployment, type HttpResult } from './broker';
import { pidsWithEnvPrefix } from '../../devtools/procs';

export const CLIENT_TOKEN = 'client-token-of-the-cluster-test';
export const CLUSTER_TOKEN = `cluster-${randomBytes(12).toString('hex')}`;
/** Sessions each node serves: one container of two. */
export const SESSIONS_PER_NODE = 2;
/** Starts of a node whose registration the store did not answer in time (startNodeWith). */
const REGISTER_ATTEMPTS = 3;

/** The settings of node `nodeId` beyond the cluster's own. */
export type NodeEnv = (nodeId: string) => Record<string, string>;

export interface ClusterOptions {
  /** Mutual TLS between gateways and nodes (default true); false: plain HTTP with the cluster token. */
  nodeTls?: boolean;
}

export class TestCluster {
  readonly nodes = new Map<string, BrokerProcess>();
  readonly gateways: BrokerProcess[] = [];
  /** Every process started, killed or not: none may be left at the end. */
  readonly started: BrokerProcess[] = [];
  readonly prefix = `/bash-broker-test-${process.pid}-${randomBytes(3).toString('hex')}/`;

  private constructor(
    readonly etcd: TestEtcd,
    /** What a node gets over the cluster's own settings (a task API's stub model, a group directory of its own). */
    private readonly nodeEnv: NodeEnv,
    readonly nodeTls: boolean,
  ) {}

  static async start(nodeIds: string[], gatewayCount: number, nodeEnv: NodeEnv = () => ({}), options: ClusterOptions = {}): Promise<TestCluster> {
    // The store is reached over mutual TLS, as a cluster across hosts should reach it.
    const cluster = new TestCluster(await TestEtcd.start({ tls: true }), nodeEnv, options.nodeTls ?? true);
    const pki = cluster.etcd.pki!;
    presentToNodes(cluster.nodeTls ? { ca: pki.clusterCa, cert: pki.gatewayCert, key: pki.gatewayKey } : null);
    try {
      await Promise.all([...nodeIds.map((id) => cluster.startNode(id)), ...Array.from({ length: gatewayCount }, () => cluster.startGateway())]);
      await cluster.waitMembers(nodeIds);
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  private commonEnv(): Record<string, string> {
    return {
      ...this.etcd.clientEnv(),
      BROKER_CLUSTER_TOKEN: CLUSTER_TOKEN,
      BROKER_CLUSTER_PREFIX: this.prefix,
      HOST: '127.0.0.1',
      PORT: '0',
      BROKER_ACQUIRE_TIMEOUT: '10',
      BROKER_SHUTDOWN_GRACE: '2',
    };
  }

  /** The gateway-to-node TLS settings of a node or a gateway, when the cluster has it. */
  private tlsEnv(role: 'node' | 'gateway'): Record<string, string> {
    if (!this.nodeTls) return {};
    const pki = this.etcd.pki!;
    const [cert, key] = role === 'node' ? [pki.nodeCert, pki.nodeKey] : [pki.gatewayCert, pki.gatewayKey];
    return { BROKER_CLUSTER_CA: pki.clusterCa, BROKER_CLUSTER_CERT: cert, BROKER_CLUSTER_KEY: key };
  }

  /** A node; the same id again is a restart (a new incarnation, the same working root). */
  async startNode(nodeId: string): Promise<BrokerProcess> {
    return this.startNodeWith(nodeId, {});
  }

  /**
   * A node with settings of its own over the cluster's (a certificate the store refuses, say).
   * A node gives up its start when the store does not grant its lease within the node's deadline
   * (2 s), and stops what it started. Whether a store answers that fast on a machine busy with other
   * suites is not what these suites test: such a start is tried again, up to REGISTER_ATTEMPTS times.
   * Any other failure (a certificate refused, a setting missing) is the test's at once.
   */
  async startNodeWith(nodeId: string, env: Record<string, string>): Promise<BrokerProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startNodeOnce(nodeId, env);
      } catch (err) {
        const slowStore = /could not register in the cluster store[^\n]*the store did not answer within/.test(err instanceof Error ? err.message : String(err));
        if (!slowStore || attempt >= REGISTER_ATTEMPTS) throw err;
      }
    }
  }

  private async startNodeOnce(nodeId: string, env: Record<string, string>): Promise<BrokerProcess> {
    const localRoot = BrokerProcess.localRoot(`${this.prefix.replace(/\W+/g, '')}-${nodeId}`);
    const node = await BrokerProcess.start(`node ${nodeId}`, {
      ...this.commonEnv(),
      ...this.tlsEnv('node'),
      BROKER_ROLE: 'node',
      BROKER_NODE_ID: nodeId,
      BROKER_BACKEND: testBackend,
      BROKER_CONTAINERS: '1',
      BROKER_SESSIONS_PER_CONTAINER: String(SESSIONS_PER_NODE),
      BROKER_LOCAL_CGROUPS: 'off',
      BROKER_LOCAL_ROOT: localRoot,
      BROKER_DEPLOYMENT: testDeployment(`cluster-${process.pid}-${nodeId}`),
      ...this.nodeEnv(nodeId),
      ...env,
    }).catch((err: unknown) => {
      // A node that failed to start (as a test meant it to) leaves no working root behind.
      if (!this.nodes.has(nodeId)) fs.rmSync(localRoot, { recursive: true, force: true });
      throw err;
    });
    this.nodes.set(nodeId, node);
    this.started.push(node);
    return node;
  }

  async startGateway(): Promise<BrokerProcess> {
    return this.startGatewayWith({});
  }

  /** A gateway with settings of its own over the cluster's (a certificate the nodes refuse, say). */
  async startGatewayWith(env: Record<string, string>): Promise<BrokerProcess> {
    const gateway = await BrokerProcess.start(`gateway ${this.gateways.length + 1}`, { ...this.commonEnv(), ...this.tlsEnv('gateway'), BROKER_ROLE: 'gateway', BROKER_TOKEN: CLIENT_TOKEN, ...env });
    this.gateways.push(gateway);
    this.started.push(gateway);
    return gateway;
  }

  /** A call to a gateway (or any broker) with the client's token. */
  call(target: BrokerProcess, method: string, path: string, body?: unknown): Promise<HttpResult> {
    return call(target.url, method, path, body, { authorization: `Bearer ${CLIENT_TOKEN}` });
  }

  async health(gateway: BrokerProcess): Promise<GatewayHealth> {
    return (await call(gateway.url, 'GET', '/health')).json as GatewayHealth;
  }

  /** Until every live gateway lists exactly `nodeIds`, each with its whole pool available. */
  async waitMembers(nodeIds: string[], timeoutMs = 60_000): Promise<void> {
    const want = [...nodeIds].sort().join(',');
    let last: GatewayHealth | null = null;
    for (const gateway of this.gateways.filter((g) => g.alive)) {
      await eventually(
        async () => {
          last = await this.health(gateway);
          const ids = last.nodes.map((n) => n.node_id).sort().join(',');
          return ids === want && last.nodes.every((n) => n.pools.default?.available === SESSIONS_PER_NODE);
        },
        timeoutMs,
        () => `gateway ${gateway.url} to list ${want} with every session available (last: ${JSON.stringify(last)})`,
      );
    }
  }

  /** The registrations under this cluster's prefix in the store (etcdctl, as an operator would look). */
  registrations(): string[] {
    const out = execFileSync('etcdctl', [...this.etcd.etcdctlArgs(), 'get', '--prefix', `${this.prefix}nodes/`, '--keys-only'], { encoding: 'utf8', env: { ...process.env, ETCDCTL_API: '3' } });
    return out.split('\n').filter((l) => l.trim() !== '');
  }

  /** Containers (Docker) of a node's deployment, by id. */
  containersOf(nodeId: string): string[] {
    const node = this.nodes.get(nodeId)!;
    const out = execFileSync('docker', ['ps', '-aq', '--filter', `label=io.bash-broker.deployment=${node.env.BROKER_DEPLOYMENT}`], { encoding: 'utf8' });
    return out.split('\n').filter((l) => l.trim() !== '');
  }

  /**
   * What the nodes this cluster started left: live local shells (their BROKER_SESSION_TAG names the
   * node's pid), or containers of their deployments on Docker.
   */
  leftovers(): string[] {
    if (testBackend === 'docker') return [...this.nodes.keys()].flatMap((id) => this.containersOf(id));
    return this.started.filter((p) => p.env.BROKER_ROLE === 'node').flatMap((p) => pidsWithEnvPrefix(`BROKER_SESSION_TAG=${p.pid}-`).map(String));
  }

  /** Nodes first (they leave the membership as they drain), then gateways, then the store. */
  async stop(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((n) => n.stop()));
    await Promise.all(this.gateways.map((g) => g.stop()));
    await this.etcd.destroy();
    for (const p of this.started) if (p.env.BROKER_LOCAL_ROOT) fs.rmSync(p.env.BROKER_LOCAL_ROOT, { recursive: true, force: true });
  }
}

/**
 * One cluster for a test file: started before its tests (`nodeIds`, `gatewayCount` gateways), all of
 * it stopped after them, with the test's HTTP clients. What it returns stands for the cluster once
 * started (its tests read `cluster.gateways` as they would a variable set in their beforeAll).
 */
export function useTestCluster(nodeIds: string[] = ['n1', 'n2'], gatewayCount = 2, nodeEnv: NodeEnv = () => ({}), options: ClusterOptions = {}): TestCluster {
  let cluster: TestCluster | undefined;
  beforeAll(async () => {
    cluster = await TestCluster.start(nodeIds, gatewayCount, nodeEnv, options);
  }, 240_000);
  afterAll(async () => {
    await cluster?.stop();
    await closeClients();
  }, 120_000);
  return new Proxy({} as TestCluster, {
    get(_, name) {
      if (!cluster) throw new Error('the test cluster did not start');
      const value: unknown = Reflect.get(cluster, name);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(cluster) : value;
    },
  });
}

/** The node an id names (ids are `<node>.<incarnation>.<random>`: the test reads what the gateway routes by). */
export function nodeOf(sessionId: string): string {
  return sessionId.split('.')[0];
}

/**
 * Whether a shell's BROKER_SESSION_TAG (`echo "$BROKER_SESSION_TAG"`) names the node process `pid`:
 * a backend instance is `<pid>-<random>` (local) or `<host>-<pid>-<random>` (Docker).
 */
export function tagNamesPid(tag: string, pid: number): boolean {
  return new RegExp(`(^|-)${pid}-`).test(tag.trim());
}
