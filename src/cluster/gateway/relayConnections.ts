/**
 * One node's connections for the calls a gateway relays: undici Clients, one call at a time each.
 * A call takes the connection freed last (it is open and warm), else opens one more up to `max`; past
 * that it waits, in arrival order, for the first to be freed. undici's Pool keeps the same rules, but
 * through a drain event and a pass over its clients at every call, which cost a relayed call about
 * 30 us of the gateway's CPU here (a gateway relaying `true` executes one at a time: ~165 us of CPU
 * per call with Clients taken this way, ~195 us through a Pool).
 */
import { Client, type buildConnector } from 'undici';

/** A call that waits for a connection: started with one, or failed when they are all closed. */
interface Waiting {
  start(client: Client): void;
  fail(err: Error): void;
}

export class ConnectionsClosedError extends Error {
  constructor(address: string) {
    super(`the connections to ${address} were closed`);
  }
}

export class RelayConnections {
  /** Free connections, the one freed last at the end. */
  private readonly idle: Client[] = [];
  private readonly all = new Set<Client>();
  private readonly waiting: Waiting[] = [];
  private closed = false;

  constructor(
    private readonly address: string,
    private readonly max: number,
    private readonly keepAliveTimeoutMs: number,
    /** TLS to the node (its CA, this gateway's certificate: a connector shared by every connection), or undefined over plain HTTP. */
    private readonly connect?: buildConnector.connector,
  ) {}

  /**
   * Runs `call` with a connection of its own until it calls `done` (once, when its answer ended or
   * failed); `failed` instead when the connections are closed before one was free.
   */
  use(call: (client: Client, done: () => void) => void, failed: (err: Error) => void): void {
    if (this.closed) return failed(new ConnectionsClosedError(this.address));
    const client = this.idle.pop() ?? (this.all.size < this.max ? this.open() : null);
    if (client) return this.start(client, call);
    this.waiting.push({ start: (c) => this.start(c, call), fail: failed });
  }

  private open(): Client {
    const client = new Client(this.address, { pipelining: 1, keepAliveTimeout: this.keepAliveTimeoutMs, connect: this.connect });
    this.all.add(client);
    return client;
  }

  private start(client: Client, call: (client: Client, done: () => void) => void): void {
    let freed = false;
    call(client, () => {
      if (freed) return;
      freed = true;
      this.free(client);
    });
  }

  /** A connection whose call ended: to the first call waiting, or idle. A destroyed one is dropped. */
  private free(client: Client): void {
    if (this.closed || client.destroyed) {
      this.all.delete(client);
      if (this.closed || this.waiting.length === 0) return;
      client = this.open();
    }
    const next = this.waiting.shift();
    if (next) next.start(client);
    else this.idle.push(client);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.fail(new ConnectionsClosedError(this.address));
    this.idle.length = 0;
    const clients = [...this.all];
    this.all.clear();
    await Promise.all(clients.map((c) => c.destroy().catch(() => undefined)));
  }
}
