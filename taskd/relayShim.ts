/**
 * The sandbox has no network (Core runs it with `--network none`): the model endpoints and a git
 * server are reached through Core's relay, an HTTP server on a unix socket in the directory Core
 * mounts here. Pi's providers take an http:// base URL, so this shim listens on the loopback (which
 * a network-less container still has) and pipes each connection to that socket, byte for byte.
 */
import net from 'node:net';

export interface RelayShim {
  /** http://127.0.0.1:PORT */
  origin: string;
  close(): void;
}

export function startRelayShim(socketPath: string): Promise<RelayShim> {
  const server = net.createServer((client) => {
    const upstream = net.connect(socketPath);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.pipe(upstream).pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      resolve({ origin: `http://127.0.0.1:${port}`, close: () => server.close() });
    });
  });
}
