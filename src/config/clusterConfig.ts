/**
 * Settings of a cluster of brokers (docs/cluster.md): which role this process plays, where the
 * membership store is, and the secret gateways and nodes share. Resolved with the rest of the
 * configuration (config.ts), validated the same way. The default role, standalone, reads none of the
 * other variables: a broker that is not in a cluster is configured as it always was.
 */
import fs from 'node:fs';
import os from 'node:os';
import { ConfigError, int, seconds, type Env } from './envValues';

export const BROKER_ROLES = ['standalone', 'node', 'gateway'] as const;
export type BrokerRole = (typeof BROKER_ROLES)[number];

/**
 * A node's id: lower-case letters, digits and '-', so that it sits in a session id before a '.'
 * (ids.ts), in an etcd key and in a Prometheus label as it is.
 */
export const NODE_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,39}$/;

export interface ClusterConfig {
  /** BROKER_ROLE: standalone (the default), node or gateway. */
  role: BrokerRole;
  /** BROKER_NODE_ID (node): the name its ids carry; by default the host's name, made to fit NODE_ID_PATTERN. */
  nodeId: string;
  /** BROKER_NODE_ADDRESS (node): the base URL gateways reach it at; null: http(s)://HOST:<port it listens on> (https with clusterTls). */
  nodeAddress: string | null;
  /** BROKER_ETCD_ENDPOINTS: the store's client URLs, comma-separated. */
  etcdEndpoints: string[];
  /** BROKER_ETCD_CA / BROKER_ETCD_CERT / BROKER_ETCD_KEY: mutual TLS to the store; null over plain http. */
  etcdTls: EtcdTlsFiles | null;
  /** BROKER_CLUSTER_PREFIX: the store's key prefix of this cluster (several clusters may share one store). */
  keyPrefix: string;
  /**
   * BROKER_CLUSTER_CA / BROKER_CLUSTER_CERT / BROKER_CLUSTER_KEY: mutual TLS between gateways and
   * nodes (a node serves HTTPS and takes only clients its CA signed; a gateway presents its
   * certificate and checks the node's); null: plain HTTP with the cluster token alone.
   */
  clusterTls: ClusterTlsFiles | null;
  /** BROKER_CLUSTER_TOKEN: the secret a gateway sends to every node, and every node requires. */
  clusterToken: string;
  /** BROKER_NODE_TTL: how long a node's registration outlives its last refresh (the store's lease). */
  nodeTtlSeconds: number;
  /** BROKER_NODE_HEARTBEAT: how often a node refreshes its registration and its capacity. */
  heartbeatMs: number;
  /** BROKER_PLACEMENT_TTL: how long the store remembers which node an acquire's request_id went to. */
  placementTtlSeconds: number;
}

/**
 * PEM files for https endpoints: the CA that signed the store's certificate (null: the system's
 * roots) and this process's client certificate and key (null: none; a store that requires client
 * certificates, as a cluster's should, then refuses the connection).
 */
export interface EtcdTlsFiles {
  caFile: string | null;
  certFile: string | null;
  keyFile: string | null;
}

function readablePath(env: Env, name: string): string | null {
  const file = (env[name] ?? '').trim();
  if (file === '') return null;
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch {
    throw new ConfigError(`${name} names a file this process cannot read: '${file}'`);
  }
  return file;
}

/** The store's TLS files, checked against its endpoints' scheme: all https (TLS) or all http (none). */
function etcdTlsOf(env: Env, endpoints: readonly string[]): EtcdTlsFiles | null {
  const files = { caFile: readablePath(env, 'BROKER_ETCD_CA'), certFile: readablePath(env, 'BROKER_ETCD_CERT'), keyFile: readablePath(env, 'BROKER_ETCD_KEY') };
  const secure = endpoints.filter((e) => e.startsWith('https://')).length;
  if (secure > 0 && secure < endpoints.length) throw new ConfigError('BROKER_ETCD_ENDPOINTS must be all https:// (TLS) or all http://, not a mix');
  if ((files.certFile === null) !== (files.keyFile === null)) throw new ConfigError('BROKER_ETCD_CERT and BROKER_ETCD_KEY go together: a client certificate and its key');
  const anyFile = files.caFile !== null || files.certFile !== null;
  if (secure === 0) {
    if (anyFile && endpoints.length > 0) throw new ConfigError('BROKER_ETCD_CA, BROKER_ETCD_CERT and BROKER_ETCD_KEY are for https:// endpoints; BROKER_ETCD_ENDPOINTS are http://');
    return null;
  }
  return files;
}

/** PEM files of the gateway-to-node leg: the cluster's CA, and this process's certificate and key. */
export interface ClusterTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

const CLUSTER_TLS_VARIABLES = ['BROKER_CLUSTER_CA', 'BROKER_CLUSTER_CERT', 'BROKER_CLUSTER_KEY'] as const;

/**
 * The three files or none: a node that had only some would either serve plain HTTP when its
 * operator meant TLS, or serve TLS that no gateway can check. Half a configuration is refused.
 */
function clusterTlsOf(env: Env): ClusterTlsFiles | null {
  const [caFile, certFile, keyFile] = CLUSTER_TLS_VARIABLES.map((name) => readablePath(env, name));
  if (caFile !== null && certFile !== null && keyFile !== null) return { caFile, certFile, keyFile };
  const missing = CLUSTER_TLS_VARIABLES.filter((_name, i) => [caFile, certFile, keyFile][i] === null);
  if (missing.length === CLUSTER_TLS_VARIABLES.length) return null;
  throw new ConfigError(
    `BROKER_CLUSTER_CA, BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY go together (mutual TLS between gateways and nodes): ${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} missing; set all three, or none for plain HTTP`,
  );
}

/** The smallest clean node id out of a host name (`Web_01.example` -> `web-01-example`). */
export function nodeIdOf(hostname: string): string {
  const id = hostname.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+/, '').slice(0, 40);
  return id === '' ? 'node' : id;
}

export function loadClusterConfig(env: Env, requestIdWindowMs: number): ClusterConfig {
  const role = (env.BROKER_ROLE ?? '').trim() || 'standalone';
  if (!(BROKER_ROLES as readonly string[]).includes(role)) throw new ConfigError(`BROKER_ROLE must be one of ${BROKER_ROLES.join(', ')}, got '${role}'`);
  const nodeId = (env.BROKER_NODE_ID ?? '').trim() || nodeIdOf(os.hostname());
  const config: ClusterConfig = {
    role: role as BrokerRole,
    nodeId,
    nodeAddress: (env.BROKER_NODE_ADDRESS ?? '').trim().replace(/\/+$/, '') || null,
    etcdEndpoints: (env.BROKER_ETCD_ENDPOINTS ?? '').split(',').map((e) => e.trim()).filter((e) => e !== ''),
    etcdTls: null,
    clusterTls: null,
    keyPrefix: (env.BROKER_CLUSTER_PREFIX ?? '').trim() || '/bash-broker/',
    clusterToken: (env.BROKER_CLUSTER_TOKEN ?? '').trim(),
    nodeTtlSeconds: int(env, 'BROKER_NODE_TTL', 5, { min: 2, max: 3600 }),
    heartbeatMs: seconds(env, 'BROKER_NODE_HEARTBEAT', 1),
    placementTtlSeconds: int(env, 'BROKER_PLACEMENT_TTL', Math.max(1, Math.ceil(requestIdWindowMs / 1000)), { max: 7 * 86400 }),
  };
  if (config.role === 'standalone') return config;
  config.etcdTls = etcdTlsOf(env, config.etcdEndpoints);
  config.clusterTls = clusterTlsOf(env);
  if (!NODE_ID_PATTERN.test(config.nodeId)) throw new ConfigError(`BROKER_NODE_ID must be 1 to 40 of a-z, 0-9 and '-' (not first), got '${config.nodeId}'`);
  if (config.etcdEndpoints.length === 0) throw new ConfigError(`BROKER_ROLE=${role} needs BROKER_ETCD_ENDPOINTS (the store's client URLs, comma-separated)`);
  if (config.clusterToken.length < 16) throw new ConfigError(`BROKER_ROLE=${role} needs BROKER_CLUSTER_TOKEN, a secret of at least 16 characters shared by the gateways and the nodes`);
  if (config.heartbeatMs * 2 > config.nodeTtlSeconds * 1000) {
    throw new ConfigError(`BROKER_NODE_HEARTBEAT must be at most half of BROKER_NODE_TTL (a registration must be refreshed before it lapses), got ${config.heartbeatMs / 1000} s against ${config.nodeTtlSeconds} s`);
  }
  if (config.nodeAddress !== null && !/^https?:\/\/[^/]+$/.test(config.nodeAddress)) {
    throw new ConfigError(`BROKER_NODE_ADDRESS must be a base URL like http://10.0.0.5:8180, got '${config.nodeAddress}'`);
  }
  const scheme = config.clusterTls ? 'https' : 'http';
  if (config.nodeAddress !== null && !config.nodeAddress.startsWith(`${scheme}://`)) {
    const why = config.clusterTls ? 'BROKER_CLUSTER_CA, BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY are set: the node serves HTTPS' : 'without BROKER_CLUSTER_CA, BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY the node serves plain HTTP';
    throw new ConfigError(`BROKER_NODE_ADDRESS must be ${scheme}:// (${why}), got '${config.nodeAddress}'`);
  }
  return config;
}
