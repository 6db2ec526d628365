/**
 * Mutual TLS between gateways and nodes (BROKER_CLUSTER_CA / _CERT / _KEY, clusterConfig.ts): a node
 * serves HTTPS and takes only clients whose certificate the cluster's CA signed; a gateway presents
 * its own and checks the node's against the same CA and the node's address (its host must be a
 * subject alternative name of the node's certificate).
 *
 * The files are read again, without a restart, on SIGHUP and when they change (their directories
 * are watched, so a Kubernetes Secret's swap of its files is seen too; changes are taken together
 * once they stop for a moment). A new set is checked whole before it is used: a certificate and a
 * key that do not go together (one of them written, the other not yet), a file that is no PEM, or
 * a node certificate that does not name the node's address keeps the set in use, and says why at
 * error level. What uses a new set: a node's listener for new connections (setSecureContext), a
 * gateway's new connections to nodes. Connections already open keep the handshake they made.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import type { ServerOptions } from 'node:https';
import type { ClusterTlsFiles } from '../config/clusterConfig';
import { errorMessage } from '../common/errors';
import { logger } from '../common/logger';

/** One set of the cluster's TLS files, read whole and checked. */
export interface TlsIdentity {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
  /** A gateway's side, built once per set: every connection to a node shares it (and undici resumes TLS sessions per node). */
  context: tls.SecureContext;
}

/**
 * The version a gateway speaks to nodes. In TLS 1.3 a client learns that the server refused its
 * certificate only after its own handshake ended, once its request is written: as a connection
 * closed with no answer and no reason, which a gateway cannot tell from a node that broke in the
 * middle of a call. In TLS 1.2 that refusal fails the handshake itself, so the gateway knows the
 * call never reached the node, and says why. Same AEAD ciphers either way (Node's defaults), and a
 * kept connection pays no handshake at all; a node accepts 1.2 and up.
 */
const GATEWAY_TLS_VERSION = 'TLSv1.2';

/** How long the files must stay unchanged before they are read: a renewal writes several of them. */
const SETTLE_MS = 500;

export class ClusterTlsError extends Error {}

/** Reads and checks a set of files: a key that is not the certificate's, or a file that is no PEM, throws with their names. */
function readIdentity(files: ClusterTlsFiles): TlsIdentity {
  const [ca, cert, key] = [files.caFile, files.certFile, files.keyFile].map((file) => fs.readFileSync(file));
  try {
    return { ca, cert, key, context: tls.createSecureContext({ ca, cert, key, maxVersion: GATEWAY_TLS_VERSION }) };
  } catch (err) {
    throw new ClusterTlsError(`BROKER_CLUSTER_CA, BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY (${files.caFile}, ${files.certFile}, ${files.keyFile}) do not make a TLS identity: ${errorMessage(err)}`);
  }
}

/** The serial number of a PEM certificate, as logs and tests name it. */
export function serialOf(cert: Buffer): string {
  return new X509Certificate(cert).serialNumber;
}

/** The cluster's TLS files in use, and their reloads (module comment). */
export class ClusterTls {
  private identity: TlsIdentity;
  private readonly checks: Array<(identity: TlsIdentity) => void> = [];
  private readonly listeners: Array<(identity: TlsIdentity) => void> = [];
  private readonly watchers: fs.FSWatcher[] = [];
  private settleTimer: NodeJS.Timeout | null = null;
  private readonly onHangup = (): void => {
    this.reload('SIGHUP');
  };

  constructor(readonly files: ClusterTlsFiles) {
    this.identity = readIdentity(files);
  }

  get ca(): Buffer {
    return this.identity.ca;
  }
  get cert(): Buffer {
    return this.identity.cert;
  }
  get key(): Buffer {
    return this.identity.key;
  }
  get context(): tls.SecureContext {
    return this.identity.context;
  }

  /** A check a new set must also pass (a node's: its certificate names its address). */
  addCheck(check: (identity: TlsIdentity) => void): void {
    this.checks.push(check);
  }

  /** Called with each new set taken. */
  onChange(listener: (identity: TlsIdentity) => void): void {
    this.listeners.push(listener);
  }

  /** Reloads on SIGHUP and when the files' directories change, until close(). */
  watch(): void {
    process.on('SIGHUP', this.onHangup);
    const dirs = new Set([this.files.caFile, this.files.certFile, this.files.keyFile].map((f) => path.dirname(f)));
    for (const dir of dirs) {
      try {
        const watcher = fs.watch(dir, { persistent: false }, () => this.settle());
        watcher.on('error', (err) => logger.warn({ err: errorMessage(err), dir }, 'cluster TLS files: watching their directory failed; SIGHUP still reloads them'));
        this.watchers.push(watcher);
      } catch (err) {
        logger.warn({ err: errorMessage(err), dir }, 'cluster TLS files: their directory cannot be watched; SIGHUP still reloads them');
      }
    }
  }

  private settle(): void {
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(() => this.reload('files changed'), SETTLE_MS);
    this.settleTimer.unref();
  }

  /**
   * Reads the files again and takes them if they changed and pass every check; else keeps the set
   * in use. Whether a new set was taken.
   */
  reload(why: string): boolean {
    let next: TlsIdentity;
    try {
      const [ca, cert, key] = [this.files.caFile, this.files.certFile, this.files.keyFile].map((file) => fs.readFileSync(file));
      if (ca.equals(this.identity.ca) && cert.equals(this.identity.cert) && key.equals(this.identity.key)) return false;
      next = readIdentity(this.files);
      for (const check of this.checks) check(next);
    } catch (err) {
      logger.error({ err: errorMessage(err), why, serial: serialOf(this.identity.cert) }, 'cluster TLS files NOT reloaded: the new set is refused, the one in use is kept (fix the files; they are read again when they change, or on SIGHUP)');
      return false;
    }
    const before = serialOf(this.identity.cert);
    this.identity = next;
    for (const listener of this.listeners) listener(next);
    logger.info({ why, serial: serialOf(next.cert), before }, 'cluster TLS files reloaded: new connections use them');
    return true;
  }

  close(): void {
    process.off('SIGHUP', this.onHangup);
    if (this.settleTimer) clearTimeout(this.settleTimer);
    for (const watcher of this.watchers.splice(0)) watcher.close();
  }
}

/** Reads and checks the files: a key that is not the certificate's, or a file that is no PEM, stops the start with its name. */
export function loadClusterTls(files: ClusterTlsFiles): ClusterTls {
  return new ClusterTls(files);
}

/** A node's HTTPS listener: its certificate, and a client certificate of the cluster's CA required of every connection. */
export function nodeServerOptions(clusterTls: Pick<TlsIdentity, 'ca' | 'cert' | 'key'>): ServerOptions {
  return { ca: clusterTls.ca, cert: clusterTls.cert, key: clusterTls.key, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.2' };
}

/**
 * A node refuses to start with a certificate that does not name the host of the address it
 * registers: every gateway would refuse it at each call, far from the cause.
 */
export function checkNamesAddress(clusterTls: Pick<TlsIdentity, 'cert'>, address: string): void {
  const host = new URL(address).hostname.replace(/^\[|\]$/g, '');
  const cert = new X509Certificate(clusterTls.cert);
  const named = net.isIP(host) !== 0 ? cert.checkIP(host) : cert.checkHost(host);
  if (named === undefined) {
    throw new ClusterTlsError(`BROKER_CLUSTER_CERT does not name '${host}', the host of this node's address ${address} (its names: ${cert.subjectAltName ?? 'none'}); gateways would refuse it. Add it as a subject alternative name, or set BROKER_NODE_ADDRESS to a name it carries`);
  }
}

/** tls.connect's options for a node at `address` (the tunnel's; undici's connector adds the same host and port itself). */
export function nodeConnectOptions(clusterTls: ClusterTls): tls.ConnectionOptions {
  return { secureContext: clusterTls.context, rejectUnauthorized: true };
}

/** The server name to send: a DNS name (SNI carries no IP address). */
export function serverNameOf(host: string): string | undefined {
  return net.isIP(host) === 0 ? host : undefined;
}

/**
 * Whether `err` is a TLS failure between a gateway and a node: a certificate one side refused (an
 * alert from the node, or the node's certificate the gateway could not verify), or a node whose
 * scheme does not match the gateway's (SchemeMismatchError). The node ran nothing: its
 * application never saw the call.
 */
export function tlsRefusal(err: unknown): boolean {
  if (err instanceof SchemeMismatchError) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  // A node's TLS server checks a client's certificate once OpenSSL's part is done, and closes the
  // connection when no CA of its signed it: in TLS 1.2 that is before the handshake ended.
  if (code === 'ECONNRESET') return handshakeCut(err);
  return /^ERR_(SSL|TLS)_|CERT|SELF_SIGNED|UNABLE_TO_|HOSTNAME_MISMATCH/.test(code);
}

/** Node's words for a connection closed in the middle of its TLS handshake. */
const HANDSHAKE_CUT = /before secure TLS connection was established/;

/**
 * Whether `err` is a TLS handshake the node's side closed: a node refusing a client's certificate
 * does so, and so does a node that dies at that instant. The only TLS failure that reads the same
 * either way (an alert or a certificate not verified is a refusal for sure).
 */
export function handshakeCut(err: unknown): boolean {
  return (err as { code?: unknown }).code === 'ECONNRESET' && HANDSHAKE_CUT.test(errorMessage(err));
}

/** A gateway with TLS meeting an http:// node, or one without TLS meeting an https:// node. */
export class SchemeMismatchError extends Error {
  readonly code = 'ERR_CLUSTER_TLS_SCHEME';
  constructor(address: string, gatewayTls: boolean) {
    super(
      gatewayTls
        ? `the node registered ${address}, plain HTTP, and this gateway calls nodes over TLS only (BROKER_CLUSTER_CA is set): give the node BROKER_CLUSTER_CA, BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY`
        : `the node registered ${address}, HTTPS, and this gateway has no cluster certificate: give it BROKER_CLUSTER_CA, BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY`,
    );
  }
}

/** Throws SchemeMismatchError unless `address`'s scheme is the one the gateway's TLS setting calls for. */
export function checkScheme(address: string, clusterTls: ClusterTls | null): void {
  if (address.startsWith('https://') !== (clusterTls !== null)) throw new SchemeMismatchError(address, clusterTls !== null);
}

/** A TLS failure as an operator reads it: the error's code (the alert or the verification's) and its message. */
export function tlsReason(err: unknown): string {
  if (err instanceof SchemeMismatchError) return err.message;
  const code = (err as { code?: unknown }).code;
  const cut = code === 'ECONNRESET' ? ', as a node does with a client certificate its CA did not sign' : '';
  return `TLS between the gateway and the node failed: ${typeof code === 'string' ? `${code}: ` : ''}${errorMessage(err)}${cut} (check BROKER_CLUSTER_CA, BROKER_CLUSTER_CERT and BROKER_CLUSTER_KEY on both)`;
}
