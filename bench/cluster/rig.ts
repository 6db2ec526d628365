/**
 * The processes the cluster bench compares, all on loopback, all as built (`node dist/index.js`):
 * a private etcd (the tests' own way of starting one), a standalone broker of `sessions` sessions,
 * and a cluster of the same sessions: two nodes of half each and one gateway in front of them.
 * Every one of them is stopped by `stop()`, whatever state the run is in.
 */
import { randomBytes } from 'node:crypto';
import { TestEtcd } from '../../test/helpers/etcd';
import { BrokerProcess, type BrokerSpec } from '../lib/brokerProcess';
import { BENCH_RUN } from '../protocol';

/** Sessions per container on every broker of the rig (the bench's usual pool shape). */
const PER_CONTAINER = 8;
const WARM_MS = 120_000;
const STOP_MS = 20_000;

export interface RigNode {
  id: string;
  broker: BrokerProcess;
}

export class ClusterRig {
  readonly clusterToken = `bench-${randomBytes(16).toString('hex')}`;
  readonly standalone: BrokerProcess[] = [];
  readonly nodes: RigNode[] = [];
  gateway: BrokerProcess | null = null;
  /** A second gateway from another build (`--compare-entry`), over the same nodes: a before/after in one run. */
  compareGateway: BrokerProcess | null = null;
  private etcd: TestEtcd | null = null;

  constructor(
    private readonly sessions: number,
    private readonly logDir: string,
    /** Node flags for the gateway only (a CPU profile). */
    private readonly gatewayFlags: string[] = [],
    /** The entry script of another build's gateway to run beside this one, or null. */
    private readonly compareEntry: string | null = null,
  ) {}

  /** The header a direct call to a node carries (a node answers the cluster only). */
  get nodeHeaders(): Record<string, string> {
    return { 'x-broker-cluster-token': this.clusterToken };
  }

  async start(): Promise<void> {
    this.etcd = await TestEtcd.start();
    const cluster = {
      BROKER_ETCD_ENDPOINTS: this.etcd.endpoint,
      BROKER_CLUSTER_TOKEN: this.clusterToken,
      BROKER_CLUSTER_PREFIX: `/bench-cluster-${BENCH_RUN}/`,
    };
    const spec = (name: string, sessions: number, env: Record<string, string>, nodeFlags: string[] = []): BrokerSpec => ({
      name,
      backend: 'local',
      containers: Math.ceil(sessions / PER_CONTAINER),
      perContainer: PER_CONTAINER,
      image: 'unused-by-the-local-backend',
      env,
      nodeFlags,
    });
    const half = this.sessions / 2;
    this.standalone.push(await BrokerProcess.start(spec('standalone', this.sessions, {}), this.logDir));
    for (const id of ['n1', 'n2']) {
      const broker = await BrokerProcess.start(spec(`node-${id}`, half, { ...cluster, BROKER_ROLE: 'node', BROKER_NODE_ID: id }), this.logDir);
      this.nodes.push({ id, broker });
    }
    // The gateway's health sums its nodes' pools: "warm" once both nodes are listed, every session free.
    const gatewaySpec = spec('gateway', this.sessions, { ...cluster, BROKER_ROLE: 'gateway' }, this.gatewayFlags);
    this.gateway = await BrokerProcess.start(gatewaySpec, this.logDir);
    if (this.compareEntry) this.compareGateway = await BrokerProcess.start({ ...gatewaySpec, name: 'gateway-compare', nodeFlags: [], entry: this.compareEntry }, this.logDir);
    const all = [...this.standalone, ...this.nodes.map((n) => n.broker), this.gateway, ...(this.compareGateway ? [this.compareGateway] : [])];
    await Promise.all(all.map((b) => b.waitWarm(WARM_MS)));
  }

  /** The node a session id names (`<node>.<incarnation>.<random>`). */
  nodeOf(sessionId: string): RigNode {
    const id = sessionId.split('.')[0];
    const node = this.nodes.find((n) => n.id === id);
    if (!node) throw new Error(`session ${sessionId} names no node of the rig`);
    return node;
  }

  /** The gateway first (it holds no sessions), then the nodes and the standalone broker, then etcd. */
  async stop(): Promise<void> {
    await Promise.all([this.gateway, this.compareGateway].map((g) => g?.stop(STOP_MS).catch(() => undefined)));
    await Promise.all([...this.nodes.map((n) => n.broker), ...this.standalone].map((b) => b.stop(STOP_MS).catch(() => undefined)));
    await this.etcd?.destroy().catch(() => undefined);
  }
}
