/**
 * What each member of a cluster rig runs (clusterRig.ts starts them, rigProcess.ts keeps them): etcd
 * over mutual TLS on the rig's ports, a node broker beside each engine with its Docker backend on
 * that engine alone, and the gateways; each with its settings toward the store and the other side.
 */
import path from 'node:path';
import type { EtcdPki } from './etcdPki';
import type { MemberSpawn } from './rigProcess';
import { etcdEndpoint, nodeOf, type RigState } from './rigState';

/** A rig as its members need it: its directory, its record and the certificates it made there. */
export interface RigPlace {
  dir: string;
  state: RigState;
  pki: EtcdPki;
}

/** Member `name`'s log, in the rig's directory. */
export function memberLog(dir: string, name: string): string {
  return path.join(dir, `${name}.log`);
}

/** The store, on its ports and data; its /health on a plain-http port of its own. */
export function etcdMember({ dir, state, pki }: RigPlace): MemberSpawn {
  const client = etcdEndpoint(state);
  const peer = `http://127.0.0.1:${state.etcdPorts.peer}`;
  const health = `http://127.0.0.1:${state.etcdPorts.metrics}`;
  return {
    dir,
    name: 'etcd',
    command: 'etcd',
    args: [
      ...['--name', 'rig', '--data-dir', path.join(dir, 'etcd')],
      ...['--listen-client-urls', client, '--advertise-client-urls', client],
      ...['--cert-file', pki.serverCert, '--key-file', pki.serverKey, '--trusted-ca-file', pki.ca, '--client-cert-auth'],
      ...['--listen-metrics-urls', health],
      ...['--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `rig=${peer}`],
      // Every node writes its record once a heartbeat: keep the history short.
      ...['--auto-compaction-mode', 'periodic', '--auto-compaction-retention', '10m', '--logger', 'zap', '--log-level', 'warn'],
    ],
    env: {},
    log: memberLog(dir, 'etcd'),
  };
}

/** Node n beside the engine `engineHost` names: a restart is a new incarnation of the same node id and deployment. */
export function nodeMember(rig: RigPlace, n: number, engineHost: string): MemberSpawn {
  const { dir, state } = rig;
  const { id, deployment } = nodeOf(state, n);
  const env = {
    ...clusterEnv(rig, state.nodePorts[n - 1]),
    ...nodeTlsEnv(rig, 'node'),
    BROKER_ROLE: 'node',
    BROKER_NODE_ID: id,
    BROKER_BACKEND: 'docker',
    DOCKER_HOST: engineHost,
    BROKER_DEPLOYMENT: deployment,
    BROKER_IMAGE: state.images[0],
    // The engine's own bridge: the containers of one node reach each other, nothing else.
    BROKER_NETWORK_MODE: 'bridge',
    BROKER_SHUTDOWN_GRACE: '5',
    ...state.nodeEnv,
  };
  return { dir, name: id, command: process.execPath, args: [state.entry], env, log: memberLog(dir, id) };
}

/** Gateway g: the clients' token is the rig's. */
export function gatewayMember(rig: RigPlace, g: number): MemberSpawn {
  const { dir, state } = rig;
  const name = `g${g}`;
  const env = { ...clusterEnv(rig, state.gatewayPorts[g - 1]), ...nodeTlsEnv(rig, 'gateway'), BROKER_ROLE: 'gateway', BROKER_TOKEN: state.clientToken };
  return { dir, name, command: process.execPath, args: [state.entry], env, log: memberLog(dir, name) };
}

/** Every member's way to the store, its tokens, and its own port. */
function clusterEnv({ state, pki }: RigPlace, port: number): Record<string, string> {
  return {
    BROKER_ETCD_ENDPOINTS: etcdEndpoint(state),
    BROKER_ETCD_CA: pki.ca,
    BROKER_ETCD_CERT: pki.clientCert,
    BROKER_ETCD_KEY: pki.clientKey,
    BROKER_CLUSTER_TOKEN: state.clusterToken,
    BROKER_CLUSTER_PREFIX: state.prefix,
    HOST: '127.0.0.1',
    PORT: String(port),
    BROKER_LOG_LEVEL: 'info',
  };
}

/** A member's TLS settings toward the other side (a node's certificate names 127.0.0.1; a gateway's is a client's). */
function nodeTlsEnv({ state, pki }: RigPlace, role: 'node' | 'gateway'): Record<string, string> {
  if (!state.nodeTls) return {};
  const [cert, key] = role === 'node' ? [pki.nodeCert, pki.nodeKey] : [pki.gatewayCert, pki.gatewayKey];
  return { BROKER_CLUSTER_CA: pki.clusterCa, BROKER_CLUSTER_CERT: cert, BROKER_CLUSTER_KEY: key };
}
