/**
 * A gateway's connections to one node for relayed calls: a call takes the connection freed last,
 * opens one more up to the bound, and past it waits in arrival order; a destroyed connection is
 * dropped, not handed out; closing fails the calls still waiting.
 * @backend any
 */
import type { Client } from 'undici';
import { ConnectionsClosedError, RelayConnections } from '../../src/cluster/gateway/relayConnections';

/** A call that keeps its connection until `done` is called; failures recorded. */
function holder(connections: RelayConnections) {
  const held: Array<{ client: Client; done: () => void; name: string }> = [];
  const failed: Array<{ name: string; err: Error }> = [];
  const use = (name: string): void =>
    connections.use(
      (client, done) => void held.push({ client, done, name }),
      (err) => void failed.push({ name, err }),
    );
  return { held, failed, use };
}

describe('a node\'s relay connections', () => {
  let connections: RelayConnections;
  afterEach(() => connections.close());

  test('a call takes the connection freed last; past the bound calls wait and start in arrival order', () => {
    connections = new RelayConnections('http://127.0.0.1:9', 2, 1_000);
    const { held, use } = holder(connections);
    use('a');
    use('b');
    expect(held.map((h) => h.name)).toEqual(['a', 'b']);
    expect(held[0].client).not.toBe(held[1].client);
    use('c');
    use('d');
    expect(held).toHaveLength(2); // both connections busy: c and d wait
    held[1].done();
    held[1].done(); // a second done frees nothing more
    expect(held.map((h) => h.name)).toEqual(['a', 'b', 'c']);
    expect(held[2].client).toBe(held[1].client);
    held[0].done();
    expect(held.map((h) => h.name)).toEqual(['a', 'b', 'c', 'd']);
    expect(held[3].client).toBe(held[0].client);
    held[2].done();
    held[3].done();
    use('e'); // the connection freed last
    expect(held[4].client).toBe(held[3].client);
  });

  test('a destroyed connection is dropped: a waiting call gets a new one', async () => {
    connections = new RelayConnections('http://127.0.0.1:9', 1, 1_000);
    const { held, use } = holder(connections);
    use('a');
    use('b');
    await held[0].client.destroy();
    held[0].done();
    expect(held.map((h) => h.name)).toEqual(['a', 'b']);
    expect(held[1].client).not.toBe(held[0].client);
    expect(held[1].client.destroyed).toBe(false);
  });

  test('closing fails the calls still waiting, and every call after', async () => {
    connections = new RelayConnections('http://127.0.0.1:9', 1, 1_000);
    const { held, failed, use } = holder(connections);
    use('a');
    use('b');
    await connections.close();
    expect(failed.map((f) => f.name)).toEqual(['b']);
    expect(failed[0].err).toBeInstanceOf(ConnectionsClosedError);
    expect(held[0].client.destroyed).toBe(true);
    use('c');
    expect(failed.map((f) => f.name)).toEqual(['b', 'c']);
    held[0].done(); // the call that held one ends after: nothing is handed out
    expect(held).toHaveLength(1);
  });
});
