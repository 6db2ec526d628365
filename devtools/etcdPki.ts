/**
 * Certificates for a cluster over mutual TLS, made with openssl as an operator would (docs/deploy.md).
 * The store's leg: a CA, the store's certificate for 127.0.0.1, a client certificate the cluster's
 * members present. The gateway-to-node leg, under a CA of its own (a store certificate opens no
 * node): a node's certificate naming 127.0.0.1 (the host of the address it registers), good as a
 * server's and a client's, and a gateway's, a client's. And a stranger's certificate from a CA of
 * its own, which the store and the nodes must refuse. EC P-256 keys: quick to make, and what etcd,
 * grpc and Node's TLS all accept.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

export interface EtcdPki {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A client certificate signed by a CA the store does not trust. */
  strangerCert: string;
  strangerKey: string;
  /** The gateway-to-node leg's CA (BROKER_CLUSTER_CA). */
  clusterCa: string;
  /** A node's certificate: subject alternative names IP:127.0.0.1 and DNS:localhost. */
  nodeCert: string;
  nodeKey: string;
  /** A gateway's certificate (a client's only). */
  gatewayCert: string;
  gatewayKey: string;
}

/** The files of a PKI made in `dir` by makeEtcdPki, by their names there. */
export function etcdPkiIn(dir: string): EtcdPki {
  const file = (name: string): string => path.join(dir, name);
  return {
    dir,
    ca: file('ca.crt'),
    serverCert: file('server.crt'),
    serverKey: file('server.key'),
    clientCert: file('client.crt'),
    clientKey: file('client.key'),
    strangerCert: file('stranger.crt'),
    strangerKey: file('stranger.key'),
    clusterCa: file('cluster-ca.crt'),
    nodeCert: file('node.crt'),
    nodeKey: file('node.key'),
    gatewayCert: file('gateway.crt'),
    gatewayKey: file('gateway.key'),
  };
}

const DAYS = '30';

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function newKey(dir: string, name: string): string {
  openssl(dir, ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
  return path.join(dir, `${name}.key`);
}

export function selfSignedCa(dir: string, name: string): void {
  newKey(dir, name);
  openssl(dir, ['req', '-x509', '-new', '-key', `${name}.key`, '-subj', `/CN=${name}`, '-days', DAYS, '-out', `${name}.crt`]);
}

/** A certificate for `cn` signed by CA `ca`, with the extensions a server or a client needs. */
export function signed(dir: string, ca: string, name: string, cn: string, extensions: string): { cert: string; key: string } {
  const key = newKey(dir, name);
  fs.writeFileSync(path.join(dir, `${name}.ext`), extensions);
  openssl(dir, ['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`]);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', DAYS, '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
  return { cert: path.join(dir, `${name}.crt`), key };
}

/** Makes the certificates in `dir` (created if missing; private keys 0600). */
export function makeEtcdPki(dir: string): EtcdPki {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  selfSignedCa(dir, 'ca');
  selfSignedCa(dir, 'stranger-ca');
  selfSignedCa(dir, 'cluster-ca');
  signed(dir, 'ca', 'server', 'etcd', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  signed(dir, 'ca', 'client', 'bash-broker', 'extendedKeyUsage=clientAuth\n');
  signed(dir, 'stranger-ca', 'stranger', 'bash-broker', 'extendedKeyUsage=clientAuth\n');
  signed(dir, 'cluster-ca', 'node', 'bash-broker-node', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  signed(dir, 'cluster-ca', 'gateway', 'bash-broker-gateway', 'extendedKeyUsage=clientAuth\n');
  for (const f of fs.readdirSync(dir)) if (f.endsWith('.key')) fs.chmodSync(path.join(dir, f), 0o600);
  return etcdPkiIn(dir);
}
