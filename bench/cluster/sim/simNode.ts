/**
 * A simulated node, for the simulation of a large cluster (no sessions, no shells): a bare node:http
 * server that answers the node API's acquire, execute and release at once, and a REAL registration
 * in the store, kept by the node's own heartbeat code (NodeHeartbeat over ClusterStore.register) with
 * a record of the real format (NodeRecord). Its ids name it as a real node's do, so a gateway routes
 * them to it; like a real node it answers only calls that carry the cluster token.
 *
 * `leave()` ends the registration (the lease revoked, as a node's SIGTERM does); `crash()` stops the
 * beats and the server without a word (as `kill -9`), leaving the lease to lapse.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ClusterStore, NodeRecord, NodeRegistration } from '../../../src/cluster/clusterStore';
import { idPrefixOf, newIncarnation, type IdOwner } from '../../../src/cluster/clusterIds';
import { NodeHeartbeat } from '../../../src/cluster/node/nodeHeartbeat';
import { CLUSTER_TOKEN_HEADER } from '../../../src/cluster/node/clusterGuard';

export interface SimNodeOptions {
  nodeId: string;
  /** Sessions of its one pool (`default`). */
  sessions: number;
  store: ClusterStore;
  clusterToken: string;
  heartbeatMs: number;
  ttlSeconds: number;
}

const EXECUTED = Buffer.from('{"status":"Success","stdout":"","stderr":"","return_code":0}');
const RELEASED = Buffer.from('{"status":"released"}');
const EXHAUSTED = Buffer.from('{"detail":"No session available (simulated node full)","code":"pool_exhausted"}');
const NOT_FROM_CLUSTER = Buffer.from('{"detail":"a simulated node answers the cluster only","code":"unauthorized"}');
const NOT_FOUND = Buffer.from('{"detail":"not a route of a simulated node","code":"not_found"}');

/** A registration whose beats can be silenced: the store then hears nothing more, as from a dead node. */
class SimRegistration implements NodeRegistration {
  silenced = false;
  published = 0;

  constructor(private readonly inner: NodeRegistration) {}

  async publish(record: NodeRecord): Promise<void> {
    if (this.silenced) return;
    await this.inner.publish(record);
    this.published++;
  }

  close(): Promise<void> {
    return this.silenced ? Promise.resolve() : this.inner.close();
  }
}

export class SimNode {
  readonly owner: IdOwner;
  url = '';
  inUse = 0;
  private minted = 0;
  private readonly server: http.Server;
  private registration: SimRegistration | null = null;
  private heartbeat: NodeHeartbeat | null = null;

  constructor(private readonly options: SimNodeOptions) {
    this.owner = { nodeId: options.nodeId, incarnation: newIncarnation() };
    this.server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => this.serve(req, res));
  }

  /** Beats published so far (each a lease renewal and a record write in the store). */
  get published(): number {
    return this.registration?.published ?? 0;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.registration = new SimRegistration(this.options.store.register(this.owner.nodeId, this.options.ttlSeconds));
    this.heartbeat = new NodeHeartbeat(this.registration, () => this.record(), this.options.heartbeatMs, () => ({ default: this.options.sessions - this.inUse }));
    await this.heartbeat.start();
  }

  record(): NodeRecord {
    const total = this.options.sessions;
    return {
      node_id: this.owner.nodeId,
      incarnation: this.owner.incarnation,
      address: this.url,
      health: 'healthy',
      pools: { default: { total, available: total - this.inUse, in_use: this.inUse, cleaning: 0, broken: 0 } },
      healthy_containers: 1,
      unhealthy_containers: 0,
      heartbeat_at_ms: Date.now(),
    };
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    req.on('data', () => undefined);
    req.on('end', () => {
      if (req.headers[CLUSTER_TOKEN_HEADER] !== this.options.clusterToken) return answer(res, 401, NOT_FROM_CLUSTER);
      const url = req.url ?? '/';
      if (req.method === 'GET' && url === '/health') return answer(res, 200, Buffer.from('{"status":"healthy"}'));
      if (req.method !== 'POST') return answer(res, 404, NOT_FOUND);
      if (url === '/session/acquire') {
        if (this.inUse >= this.options.sessions) return answer(res, 503, EXHAUSTED);
        this.inUse++;
        const id = `${idPrefixOf(this.owner)}${(++this.minted).toString(16).padStart(32, '0')}`;
        return answer(res, 200, Buffer.from(`{"session_id":"${id}"}`));
      }
      if (url.endsWith('/execute')) return answer(res, 200, EXECUTED);
      if (url.endsWith('/release')) {
        this.inUse = Math.max(0, this.inUse - 1);
        return answer(res, 200, RELEASED);
      }
      answer(res, 404, NOT_FOUND);
    });
  }

  /** Every session free again (between the simulation's phases). */
  reset(): void {
    this.inUse = 0;
  }

  /** Ends the registration (the lease revoked): gateways see it leave at once. The server stays up. */
  async leave(): Promise<void> {
    await this.heartbeat?.close();
  }

  /** As a `kill -9`: no more beats, no revocation (the lease lapses at its TTL), the server gone. */
  async crash(): Promise<void> {
    if (this.registration) this.registration.silenced = true;
    await this.heartbeat?.close();
    this.closeServer();
  }

  async close(): Promise<void> {
    await this.heartbeat?.close();
    this.closeServer();
  }

  private closeServer(): void {
    this.server.close();
    this.server.closeAllConnections();
  }
}

function answer(res: http.ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}
