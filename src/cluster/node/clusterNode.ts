/**
 * A node of a cluster: a whole broker (broker.ts, unchanged in what it serves) whose ids name it,
 * that admits its gateways' calls only (clusterGuard.ts) and keeps its registration and capacity in
 * the store (nodeHeartbeat.ts). It stops by leaving the membership first, so gateways stop placing
 * on it, then drains as a standalone broker does.
 */
import type { AddressInfo } from 'node:net';
import type { BrokerConfig } from '../../config/config';
import { Broker } from '../../broker';
import { setIdPrefix } from '../../common/ids';
import type { ClusterStore } from '../clusterStore';
import { idPrefixOf, newIncarnation, type IdOwner } from '../clusterIds';
import { clusterGuard } from './clusterGuard';
import { NodeHeartbeat } from './nodeHeartbeat';
import { nodeRecord } from './nodeRecord';
import { errorMessage } from '../../common/errors';

export class ClusterNode {
  readonly owner: IdOwner;
  readonly broker: Broker;
  private heartbeat: NodeHeartbeat | null = null;
  private closePromise: Promise<void> | null = null;

  constructor(
    readonly config: BrokerConfig,
    private readonly store: ClusterStore,
  ) {
    this.owner = { nodeId: config.cluster.nodeId, incarnation: newIncarnation() };
    // Before the broker exists: warm-up already mints ids.
    setIdPrefix(idPrefixOf(this.owner));
    this.broker = new Broker(config, { guard: clusterGuard(config.cluster.clusterToken) });
  }

  /**
   * Listens and warms as a broker does, then registers (the first heartbeat must be taken). A node
   * the store refuses (unreachable, or a certificate it does not trust) stops what it started and
   * fails, saying so: a node that cannot register would serve no gateway.
   */
  async start(): Promise<{ address: AddressInfo; url: string }> {
    const address = await this.broker.start();
    const url = this.config.cluster.nodeAddress ?? `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
    const registration = this.store.register(this.owner.nodeId, this.config.cluster.nodeTtlSeconds);
    this.heartbeat = new NodeHeartbeat(registration, () => nodeRecord(this.broker.pools, this.owner, url), this.config.cluster.heartbeatMs);
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

  close(): Promise<void> {
    this.closePromise ??= (async () => {
      await this.heartbeat?.close();
      await this.broker.close();
      await this.store.close();
    })();
    return this.closePromise;
  }
}
