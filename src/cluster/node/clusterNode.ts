/**
 * A node of a cluster: a whole broker (broker.ts, unchanged in what it serves) whose ids name it,
 * that admits its gateways' calls only (clusterGuard.ts; over mutual TLS, clusterTls.ts, when the
 * cluster has it: HTTPS, a client certificate of the cluster's CA required, and the token still) and keeps its registration and capacity in
 * the store (nodeHeartbeat.ts). It stops by leaving the membership first, so gateways stop placing
 * on it, then drains as a standalone broker does.
 */
import type https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { BrokerConfig } from '../../config/config';
import { Broker } from '../../broker';
import { setIdPrefix } from '../../common/ids';
import type { ClusterStore } from '../clusterStore';
import { idPrefixOf, newIncarnation, type IdOwner } from '../clusterIds';
import { clusterGuard } from './clusterGuard';
import type { ListenerGuard } from '../../http/listenerGuard';
import { AcquireCuts } from './acquireCuts';
import { NodeHeartbeat } from './nodeHeartbeat';
import { availableByPool, nodeRecord } from './nodeRecord';
import { errorMessage } from '../../common/errors';
import { checkNamesAddress, loadClusterTls, nodeServerOptions, type ClusterTls } from '../clusterTls';

export class ClusterNode {
  readonly owner: IdOwner;
  readonly broker: Broker;
  /** Mutual TLS with the gateways, or null (plain HTTP). */
  readonly tls: ClusterTls | null;
  private heartbeat: NodeHeartbeat | null = null;
  private closePromise: Promise<void> | null = null;

  constructor(
    readonly config: BrokerConfig,
    private readonly store: ClusterStore,
  ) {
    this.owner = { nodeId: config.cluster.nodeId, incarnation: newIncarnation() };
    // Before the broker exists: warm-up already mints ids.
    setIdPrefix(idPrefixOf(this.owner));
    this.tls = config.cluster.clusterTls ? loadClusterTls(config.cluster.clusterTls) : null;
    const cuts = new AcquireCuts();
    this.broker = new Broker(config, { guard: withAcquireCuts(clusterGuard(config.cluster.clusterToken), cuts), routers: [cuts.router()], tls: this.tls ? nodeServerOptions(this.tls) : undefined });
  }

  /**
   * Listens and warms as a broker does, then registers (the first heartbeat must be taken). A node
   * the store refuses (unreachable, or a certificate it does not trust) stops what it started and
   * fails, saying so: a node that cannot register would serve no gateway.
   */
  async start(): Promise<{ address: AddressInfo; url: string }> {
    const address = await this.broker.start();
    const scheme = this.tls ? 'https' : 'http';
    const url = this.config.cluster.nodeAddress ?? `${scheme}://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
    if (this.tls) {
      try {
        checkNamesAddress(this.tls, url);
      } catch (err) {
        await this.broker.close().catch(() => undefined);
        await this.store.close();
        throw err;
      }
      this.renewWith(this.tls, url);
    }
    const registration = this.store.register(this.owner.nodeId, this.config.cluster.nodeTtlSeconds);
    this.heartbeat = new NodeHeartbeat(registration, () => nodeRecord(this.broker.pools, this.owner, url, Date.now(), { report: this.broker.images.report, top: this.config.images.clusterTop }), this.config.cluster.heartbeatMs, () => availableByPool(this.broker.pools, this.broker.images.pools.live));
    try {
      await this.heartbeat.start();
    } catch (err) {
      await this.heartbeat.close().catch(() => undefined);
      await this.broker.close().catch(() => undefined);
      await this.store.close();
      throw new Error(`node ${this.owner.nodeId} could not register in the cluster store (${this.config.cluster.etcdEndpoints.join(', ')}): ${errorMessage(err)}`, { cause: err });
    }
    return { address, url };
  }

  /**
   * Renewed TLS files (clusterTls.ts) serve new connections from then on; a set whose certificate
   * does not name this node's address is refused, as at start.
   */
  private renewWith(clusterTls: ClusterTls, url: string): void {
    const server = this.broker.server as https.Server;
    clusterTls.addCheck((identity) => checkNamesAddress(identity, url));
    clusterTls.onChange((identity) => server.setSecureContext(nodeServerOptions(identity)));
    clusterTls.watch();
  }

  close(): Promise<void> {
    this.closePromise ??= (async () => {
      this.tls?.close();
      await this.heartbeat?.close();
      await this.broker.close();
      await this.store.close();
    })();
    return this.closePromise;
  }
}

/** The guard first (a cut is a cluster call like any other), then the gateways' tagged acquires tracked (acquireCuts.ts). */
function withAcquireCuts(guard: ListenerGuard, cuts: AcquireCuts): ListenerGuard {
  return { request: (listener) => guard.request(cuts.wrap(listener)), upgrade: guard.upgrade };
}
