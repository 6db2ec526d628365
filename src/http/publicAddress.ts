/**
 * The broker's address as the client reached it (its Host header), which every address the broker
 * hands out starts with (a sandbox's endpoints, a group sandbox's URL on a node): the client reaches
 * them where it reached the broker, or the gateway in front of it (a gateway passes the client's
 * Host on). A missing or odd Host gives the socket's own address.
 */
import type { IncomingMessage } from 'node:http';

const HOST_HEADER = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

export function publicAddress(req: IncomingMessage): string {
  const host = req.headers.host;
  if (typeof host === 'string' && HOST_HEADER.test(host)) return host;
  const address = req.socket.localAddress ?? '127.0.0.1';
  return `${address.includes(':') ? `[${address}]` : address}:${req.socket.localPort}`;
}
