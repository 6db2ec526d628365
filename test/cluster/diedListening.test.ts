/**
 * diedListening: after a broken call, a node whose port refuses connections died; one whose port
 * still takes them is alive, unless it stops taking them within the probes (a dying process closes
 * its listening socket an instant after the connection that broke).
 * @backend any
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { diedListening, refusesConnections } from '../../src/cluster/gateway/nodeForwarder';

async function listening(): Promise<{ server: net.Server; address: string }> {
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, address: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const closed = (server: net.Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()));

describe('diedListening', () => {
  it('a port that takes connections: alive', async () => {
    const { server, address } = await listening();
    try {
      expect(await refusesConnections(address)).toBe(false);
      expect(await diedListening(address)).toBe(false);
    } finally {
      await closed(server);
    }
  });

  it('a closed port: died', async () => {
    const { server, address } = await listening();
    await closed(server);
    expect(await diedListening(address)).toBe(true);
  });

  it('a port that closes after the first probe found it open: died', async () => {
    const { server, address } = await listening();
    // The first probe's connection is the signal to close: the state, not a delay, orders the two.
    server.once('connection', () => server.close());
    expect(await diedListening(address)).toBe(true);
  });
});
