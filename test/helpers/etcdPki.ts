/**
 * Certificates for a store reached over mutual TLS, made with openssl as an operator would: a CA,
 * the store's certificate for 127.0.0.1, a client certificate the cluster's members present, and a
 * stranger's certificate from a CA of its own (which the store must refuse). EC P-256 keys: quick
 * to make, and what etcd and grpc both accept.
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
}

const DAYS = '30';

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function newKey(dir: string, name: string): string {
  openssl(dir, ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
  return path.join(dir, `${name}.key`);
}

function selfSignedCa(dir: string, name: string): void {
  newKey(dir, name);
  openssl(dir, ['req', '-x509', '-new', '-key', `${name}.key`, '-subj', `/CN=${name}`, '-days', DAYS, '-out', `${name}.crt`]);
}

/** A certificate for `cn` signed by CA `ca`, with the extensions a server or a client needs. */
function signed(dir: string, ca: string, name: string, cn: string, extensions: string): { cert: string; key: string } {
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
  const server = signed(dir, 'ca', 'server', 'etcd', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  const client = signed(dir, 'ca', 'client', 'bash-broker', 'extendedKeyUsage=clientAuth\n');
  const stranger = signed(dir, 'stranger-ca', 'stranger', 'bash-broker', 'extendedKeyUsage=clientAuth\n');
  for (const f of fs.readdirSync(dir)) if (f.endsWith('.key')) fs.chmodSync(path.join(dir, f), 0o600);
  return {
    dir,
    ca: path.join(dir, 'ca.crt'),
    serverCert: server.cert,
    serverKey: server.key,
    clientCert: client.cert,
    clientKey: client.key,
    strangerCert: stranger.cert,
    strangerKey: stranger.key,
  };
}
