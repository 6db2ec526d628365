/**
 * The processes the cluster bench compares, all on loopback, all as built (`node dist/index.js`):
 * a private etcd (the tests' own way of starting one), a standalone broker of `sessions` sessions,
 * and a cluster of the same sessions: two nodes of half each and one gateway in front of them;
 * with `nodeTls`, the gateway and the nodes speak mutual TLS (certificates made as the tests make
 * them, devtools/etcdPki.ts, in the log directory), and the bench's own calls to a node present
 * the gateway's certificate.
 * Every one of them is stopped by `stop()`, whatever state the run is in.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestEtcd } from '../../devtools/etcd';
import { makeEtcdPki, type EtcdPki } from '../../devtools/etcdPki';
import { BrokerProcess, type BrokerSpec, type TlsFiles } from '../lib/brokerProcess';
import { BENCH_RUN } from '../protocol';

/** Sessions per container on every broker of the rig (the bench's usual pool shape). */
const PER_CONTAINER = 8;
const WARM_MS = 120_000;
const STOP_MS = 20_000;
/**
 * Every broker of the rig reclaims a lease idle this long (s). An acquire its client gives up at the
 * end of an episode window can still be granted on a node after the gateway passed its answer on
 * to a client that is gone: that lease has no holder. No measured lease is idle this long (the
 * longest wait: the standalone lease during the first round's warm-up of the paths before it).
 */
const IDLE_RECLAIM_S = 60;

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
  /** Every broker process started, for stop() whatever state start() left. */
  private readonly starting: BrokerProcess[] = [];

  constructor(
    private readonly sessions: number,
    private readonly logDir: string,
    /** Node flags for the gateway only (a CPU profile). */
    private readonly gatewayFlags: string[] = [],
    /** The entry script of another build's gateway to run beside this one, or null. */
    private readonly compareEntry: string | null = null,
    /** Mutual TLS between the gateway and the nodes. */
    readonly nodeTls = false,
  ) {}

  private pki: EtcdPki | null = null;

  /** The certificate the bench presents to a node over TLS (the gateway's), or undefined over plain HTTP. */
  get nodeClientTls(): TlsFiles | undefined {
    return this.pki ? { ca: this.pki.clusterCa, cert: this.pki.gatewayCert, key: this.pki.gatewayKey } : undefined;
  }

  private tlsEnv(role: 'node' | 'gateway'): Record<string, string> {
    if (!this.pki) return {};
    const [cert, key] = role === 'node' ? [this.pki.nodeCert, this.pki.nodeKey] : [this.pki.gatewayCert, this.pki.gatewayKey];
    return { BROKER_CLUSTER_CA: this.pki.clusterCa, BROKER_CLUSTER_CERT: cert, BROKER_CLUSTER_KEY: key };
  }

  /** The header a direct call to a node carries (a node answers the cluster only). */
  get nodeHeaders(): Record<string, string> {
    return { 'x-broker-cluster-token': this.clusterToken };
  }

  async start(): Promise<void> {
    this.etcd = await TestEtcd.start();
    if (this.nodeTls) this.pki = makeEtcdPki(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cluster-pki-')), 'pki'));
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
      env: { BROKER_SESSION_IDLE_TIMEOUT: String(IDLE_RECLAIM_S), ...env },
      nodeFlags,
    });
    const half = this.sessions / 2;
    this.standalone.push(await this.startWarm(spec('standalone', this.sessions, {})));
    for (const id of ['n1', 'n2']) {
      const node = { ...spec(`node-${id}`, half, { ...cluster, ...this.tlsEnv('node'), BROKER_ROLE: 'node', BROKER_NODE_ID: id }), clientTls: this.nodeClientTls };
      this.nodes.push({ id, broker: await this.startWarm(node) });
    }
    // The gateway's health sums its nodes' pools: "warm" once both nodes are listed, every session free.
    const gatewaySpec = spec('gateway', this.sessions, { ...cluster, ...this.tlsEnv('gateway'), BROKER_ROLE: 'gateway' }, this.gatewayFlags);
    this.gateway = await this.startWarm(gatewaySpec);
    if (this.compareEntry) this.compareGateway = await this.startWarm({ ...gatewaySpec, name: 'gateway-compare', nodeFlags: [], entry: this.compareEntry });
  }

  /**
   * Starts a broker and waits until it is warm, starting it again (up to 3 times) when it exits
   * first: on a loaded machine etcd may take longer than a node's 2 s deadline for its first lease,
   * and a node that cannot register exits, as it should.
   */
  private async startWarm(spec: BrokerSpec): Promise<BrokerProcess> {
    for (let attempt = 1; ; attempt++) {
      const broker = await BrokerProcess.start(spec, this.logDir);
      this.starting.push(broker);
      try {
        await broker.waitWarm(WARM_MS);
        return broker;
      } catch (err) {
        await broker.stop(STOP_MS);
        if (attempt === 3) throw err;
        console.log(`bench: ${spec.name} did not start (${(err as Error).message.split('\n').slice(-1)[0]}); starting it again`);
      }
    }
  }

  /** Until the standalone broker and the gateway (both nodes) have every session free again. */
  async waitAllFree(): Promise<void> {
    await Promise.all([...this.standalone, this.gateway!].map((b) => b.waitWarm(IDLE_RECLAIM_S * 1000 + WARM_MS)));
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
    const gateways = this.starting.filter((b) => b.spec.env?.BROKER_ROLE === 'gateway');
    await Promise.all(gateways.map((g) => g.stop(STOP_MS).catch(() => undefined)));
    await Promise.all(this.starting.filter((b) => !gateways.includes(b)).map((b) => b.stop(STOP_MS).catch(() => undefined)));
    await this.etcd?.destroy().catch(() => undefined);
    if (this.pki) fs.rmSync(path.dirname(this.pki.dir), { recursive: true, force: true });
  }
}
