/**
 * A WebSocket upgrade through a gateway: the client's handshake is written to a new connection to the
 * node (the cluster token added), and from then on the two sockets are piped to each other, bytes as
 * they come: the node's answer (101 and the frames after it, or its refusal in its own format) reaches
 * the client unchanged, and nothing is buffered beyond what each socket's own backpressure holds.
 * When either side closes or fails, the other is closed too.
 */
import net from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { CLUSTER_TOKEN_HEADER } from '../node/clusterGuard';
import { neverSent } from './nodeForwarder';

/** How long a node gets to take the connection of a handshake (its listener answers at once when alive). */
const CONNECT_TIMEOUT_MS = 5_000;

export type TunnelOutcome = 'open' | 'notSent';

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

/**
 * Opens the tunnel to the node at `address`. Resolves 'notSent' when the node took no connection (the
 * client's socket is then untouched, for the caller's answer); 'open' once the handshake went, after
 * which the sockets are each other's. `onStatus` gets the status of the node's answer.
 */
export function tunnelUpgrade(address: string, req: IncomingMessage, client: Duplex, head: Buffer, clusterToken: string, onStatus: (status: number) => void): Promise<TunnelOutcome> {
  const url = new URL(address);
  return new Promise((resolve) => {
    const node = net.connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80) });
    node.setTimeout(CONNECT_TIMEOUT_MS, () => node.destroy(Object.assign(new Error('connect timeout'), { code: 'UND_ERR_CONNECT_TIMEOUT' })));
    const failedFirst = (err: NodeJS.ErrnoException): void => {
      node.destroy();
      if (neverSent(err)) return resolve('notSent');
      client.destroy();
      resolve('open');
    };
    node.once('error', failedFirst);
    node.once('connect', () => {
      node.off('error', failedFirst);
      // The client left while the node was reached: its close has come and gone.
      if (client.destroyed) {
        node.destroy();
        return resolve('open');
      }
      node.setTimeout(0);
      node.setNoDelay(true);
      if (client instanceof net.Socket) client.setNoDelay(true);
      node.write(handshake(req, clusterToken));
      if (head.length > 0) node.write(head);
      node.once('data', (chunk: Buffer) => {
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(chunk.toString('latin1', 0, 16));
        if (status) onStatus(Number(status[1]));
      });
      node.pipe(client);
      client.pipe(node);
      follow(node, client);
      follow(client, node);
      resolve('open');
    });
  });
}
