/**
 * The cluster roles' start (BROKER_ROLE=node|gateway; standalone starts in index.ts as it always
 * has): each over the etcd store, each with a `close()` the entry point calls on SIGTERM.
 */
import fs from 'node:fs';
import type { BrokerConfig } from '../config/config';
import type { EtcdTlsFiles } from '../config/clusterConfig';
import { logger } from '../common/logger';
import { EtcdClusterStore, type EtcdStoreOptions } from './store/etcdClusterStore';
import { ClusterNode } from './node/clusterNode';
import { Gateway } from './gateway/gateway';

export interface Started {
  close(): Promise<void>;
}

/** The store's TLS files read once, at start (a rotated certificate takes a restart, as etcd's own members do). */
function storeCredentials(files: EtcdTlsFiles): NonNullable<EtcdStoreOptions['tls']> {
  const read = (file: string | null): Buffer | undefined => (file === null ? undefined : fs.readFileSync(file));
  return { rootCertificate: read(files.caFile), certChain: read(files.certFile), privateKey: read(files.keyFile) };
}

export async function startClusterRole(config: BrokerConfig): Promise<Started> {
  const { role, etcdEndpoints, etcdTls, keyPrefix, nodeId } = config.cluster;
  const store = new EtcdClusterStore({ endpoints: etcdEndpoints, keyPrefix, tls: etcdTls ? storeCredentials(etcdTls) : undefined });
  if (role === 'gateway') {
    const gateway = new Gateway(config, store);
    const address = await gateway.start();
    logger.info({ host: address.address, port: address.port, role }, `gateway listening on http://${address.address}:${address.port}`);
    return gateway;
  }
  const node = new ClusterNode(config, store);
  const { address, url } = await node.start();
  const scheme = node.tls ? 'https' : 'http';
  logger.info({ host: address.address, port: address.port, role, node: nodeId, incarnation: node.owner.incarnation, address: url }, `node ${nodeId} listening on ${scheme}://${address.address}:${address.port}`);
  return node;
}
