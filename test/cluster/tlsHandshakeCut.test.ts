/**
 * A TLS handshake the node's side cut: a node that refuses the gateway's certificate and a node
 * that dies at that instant fail the handshake alike (ECONNRESET before the connection is secure).
 * Both are TLS failures (tlsRefusal); diedInHandshake tells them apart by the node's port, so a
 * gateway answers the first 502 node_unreachable (TLS) and the second 410 node_lost, as any call
 * broken by a node that died. Real sockets on port 0: a listener that keeps listening, one that
 * closes as it cuts, and one that sends an alert.
 * @backend any
 */
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { handshakeCut, tlsRefusal } from '../../src/cluster/clusterTls';
import { diedInHandshake } from '../../src/cluster/gateway/nodeForwarder';

/** A listener on port 0 that does `onHello` with each connection once the client's hello came. */
async function listener(onHello: (socket: net.Socket, server: net.Server) => void): Promise<{ server: net.Server; address: string }> {
  const server = net.createServer((socket) => socket.once('data', () => onHello(socket, server)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, address: `https://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** The error a gateway's handshake with `address` ends with. */
function handshakeError(address: string): Promise<Error> {
  const url = new URL(address);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: true, maxVersion: 'TLSv1.2' }, () => {
      socket.destroy();
      reject(new Error('the handshake went through'));
    });
    socket.once('error', resolve);
  });
}

function closeServer(server: net.Server): Promise<void> {
  return new Promise((r) => (server.listening ? server.close(() => r()) : r()));
}

describe('a TLS handshake cut by the node', () => {
  test('by a node that still listens (it refused the certificate): a TLS refusal', async () => {
    const { server, address } = await listener((socket) => socket.destroy());
    try {
      const err = await handshakeError(address);
      expect([tlsRefusal(err), handshakeCut(err)]).toEqual([true, true]);
      expect(await diedInHandshake(err, address)).toBe(false);
    } finally {
      await closeServer(server);
    }
  });

  test('by a node that died at that instant (its port refuses connections): a node that died', async () => {
    const { address } = await listener((socket, server) => {
      // As a process killed with SIGKILL: its listening socket closes, and the connection with it.
      server.close();
      socket.destroy();
    });
    const err = await handshakeError(address);
    expect([tlsRefusal(err), handshakeCut(err)]).toEqual([true, true]);
    expect(await diedInHandshake(err, address)).toBe(true);
  });

  test('a failure that is a refusal for sure (the node is no TLS server: a protocol error) is not probed', async () => {
    const { server, address } = await listener((socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    try {
      const err = await handshakeError(address);
      expect(tlsRefusal(err)).toBe(true);
      expect(handshakeCut(err)).toBe(false);
      // Even once the port is gone: it was a refusal when it happened.
      await closeServer(server);
      expect(await diedInHandshake(err, address)).toBe(false);
    } finally {
      await closeServer(server);
    }
  });
});
