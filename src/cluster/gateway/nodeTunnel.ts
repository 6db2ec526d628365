/**
 * A WebSocket upgrade through a gateway: the client's handshake is written to a new connection to the
 * node (over mutual TLS when the cluster has it: clusterTls.ts; the cluster token added), and from then on the two sockets are piped to each other, bytes as
 * they come: the node's answer (101 and the frames after it, or its refusal in its own format) reaches
 * the client unchanged, and nothing is buffered beyond what each socket's own backpressure holds.
 * When either side closes or fails, the other is closed too.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { CLUSTER_TOKEN_HEADER } from '../node/clusterGuard';
import { neverSent } from './nodeForwarder';
import { checkScheme, nodeConnectOptions, serverNameOf, tlsRefusal, type ClusterTls } from '../clusterTls';

/** How long a node gets to take the connection of a handshake (its listener answers at once when alive). */
const CONNECT_TIMEOUT_MS = 5_000;

/** 'tlsRefused': TLS with the node failed before the handshake went (the client's socket is untouched). */
export type TunnelOutcome = { kind: 'open' } | { kind: 'notSent' } | { kind: 'tlsRefused'; err: Error };

const OPEN: TunnelOutcome = { kind: 'open' };
const NOT_SENT: TunnelOutcome = { kind: 'notSent' };

/** How long a side that was ended gets to flush and close before it is cut. */
const CLOSE_GRACE_MS = 5_000;

/**
 * When `from` closes, `to` closes too: ended after what it still holds is written (the last close
 * frame), or at once when `from` failed.
 */
function follow(from: Duplex, to: Duplex): void {
  from.on('error', () => to.destroy());
  from.once('close', (hadError: boolean) => {
    if (hadError || to.destroyed) return void to.destroy();
    to.end();
    setTimeout(() => to.destroy(), CLOSE_GRACE_MS).unref();
  });
}

/** The handshake as the node gets it: the client's request line and headers, the cluster token in place of any the client sent. */
function handshake(req: IncomingMessage, clusterToken: string): string {
  let head = `${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i].toLowerCase() !== CLUSTER_TOKEN_HEADER) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return `${head}${CLUSTER_TOKEN_HEADER}: ${clusterToken}\r\n\r\n`;
}

/** A connection to the node at `address`, and the event that says it is ready for the handshake. */
function connectTo(address: string, clusterTls: ClusterTls | null): { node: net.Socket; ready: 'connect' | 'secureConnect' } {
  const url = new URL(address);
  checkScheme(address, clusterTls);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!clusterTls) return { node: net.connect({ host, port: Number(url.port || 80) }), ready: 'connect' };
  const port = Number(url.port || 443);
  return { node: tls.connect({ ...nodeConnectOptions(clusterTls), host, port, servername: serverNameOf(host) }), ready: 'secureConnect' };
}

/**
 * Opens the tunnel to the node at `address`. Resolves 'notSent' when the node took no connection,
 * 'tlsRefused' when TLS with it failed first (the client's socket is then untouched, for the caller's
 * answer); 'open' once the handshake went, after which the sockets are each other's. `onStatus` gets
 * the status of the node's answer.
 */
export function tunnelUpgrade(
  address: string,
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  cluster: { token: string; tls: ClusterTls | null },
  onStatus: (status: number) => void,
): Promise<TunnelOutcome> {
  return new Promise((resolve) => {
    let connection: ReturnType<typeof connectTo>;
    try {
      connection = connectTo(address, cluster.tls);
    } catch (err) {
      return resolve({ kind: 'tlsRefused', err: err as Error });
    }
    const { node, ready } = connection;
    node.setTimeout(CONNECT_TIMEOUT_MS, () => node.destroy(Object.assign(new Error('connect timeout'), { code: 'UND_ERR_CONNECT_TIMEOUT' })));
    const failedFirst = (err: NodeJS.ErrnoException): void => {
      node.destroy();
      if (neverSent(err)) return resolve(NOT_SENT);
      if (tlsRefusal(err)) return resolve({ kind: 'tlsRefused', err });
      client.destroy();
      resolve(OPEN);
    };
    node.once('error', failedFirst);
    node.once(ready, () => {
      node.off('error', failedFirst);
      // The client left while the node was reached: its close has come and gone.
      if (client.destroyed) {
        node.destroy();
        return resolve(OPEN);
      }
      node.setTimeout(0);
      node.setNoDelay(true);
      if (client instanceof net.Socket) client.setNoDelay(true);
      node.write(handshake(req, cluster.token));
      if (head.length > 0) node.write(head);
      node.once('data', (chunk: Buffer) => {
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(chunk.toString('latin1', 0, 16));
        if (status) onStatus(Number(status[1]));
      });
      node.pipe(client);
      client.pipe(node);
      follow(node, client);
      follow(client, node);
      resolve(OPEN);
    });
  });
}
