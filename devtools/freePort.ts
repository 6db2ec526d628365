/** A free loopback port, for a program that binds it right after (etcd, a broker with a fixed address). */
import net from 'node:net';

/** Released at once: a port taken between this and the program's bind is the caller's to retry. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
