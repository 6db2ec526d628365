/**
 * A gateway: no sessions of its own. It checks the client's BROKER_TOKEN, places acquires
 * (gatewayAcquire.ts), routes every call that carries an id to the node the id names (routedId.ts),
 * streams the rest to any node, and answers /health, /metrics and /cluster/targets itself from the
 * membership it watches (membership.ts). Any number of gateways serve one cluster: they share
 * nothing but the store.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { BrokerConfig } from '../../config/config';
import { createAuthorize, UnauthorizedError } from '../../http/auth';
import { openSandboxErrorFormat, poolErrorFormat, type ErrorFormat } from '../../http/errorFormats';
import { sendErrorReply, sendErrorReplyOnSocket, sendJson } from '../../http/httpJson';
import { splitTarget } from '../../http/routeTable';
import { logger } from '../../common/logger';
import type { ClusterStore, MembershipWatch } from '../clusterStore';
import { NodeLostError, NoNodesError, NodeUnreachableError, WebSocketNotRoutedError } from '../clusterErrors';
import { Membership, type Member } from './membership';
import { GatewayAcquire } from './gatewayAcquire';
import { GatewayMetrics } from './gatewayMetrics';
import { clusterTargets, gatewayHealth } from './gatewayHealth';
import { clientLeft, forwardedHeaders, neverSent, NodeClients, refusesConnections, requestBody } from './nodeForwarder';
import { routedIdOf, type RoutedId } from './routedId';
import { serveClusterDashboard } from '../../api/dashboard/clusterDashboard';

const ACQUIRE_PATHS = new Set(['/session/acquire', '/session/acquire_group']);

/** OpenSandbox's APIs answer in their own error format; everything else in the pool API's. */
function errorFormatOf(path: string): ErrorFormat {
  return path.startsWith('/v1/') || path.startsWith('/sandboxes/') ? openSandboxErrorFormat : poolErrorFormat;
}

export class Gateway {
  readonly membership = new Membership();
  readonly metrics = new GatewayMetrics(this.membership);
  readonly server: http.Server;
  private readonly clients: NodeClients;
  private readonly acquire: GatewayAcquire;
  private readonly authorize: ReturnType<typeof createAuthorize>;
  private watch: MembershipWatch | null = null;
  private closePromise: Promise<void> | null = null;

  constructor(
    private readonly config: BrokerConfig,
    private readonly store: ClusterStore,
  ) {
    this.clients = new NodeClients(config.cluster.clusterToken);
    this.authorize = createAuthorize(config.token);
    this.acquire = new GatewayAcquire({
      membership: this.membership,
      clients: this.clients,
      store,
      metrics: this.metrics,
      maxBodyBytes: config.maxBodyBytes,
      acquireTimeoutMs: config.acquireTimeoutMs,
      freeTryMs: 2 * config.cluster.heartbeatMs,
      placementTtlSeconds: config.cluster.placementTtlSeconds,
    });
    this.server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
      this.serve(req, res).catch((err: unknown) => sendErrorReply(res, errorFormatOf(splitTarget(req.url ?? '/').path).reply(err, `${req.method} ${req.url}`)));
    });
    // WebSockets are not forwarded yet: a clear 501 rather than a socket closed without a word.
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
      socket.on('error', () => socket.destroy());
      const path = splitTarget(req.url ?? '/').path;
      sendErrorReplyOnSocket(socket, errorFormatOf(path).reply(new WebSocketNotRoutedError(), `UPGRADE ${path}`));
    });
  }

  /** Watches the membership (the store must answer once, at start), then listens. */
  async start(): Promise<AddressInfo> {
    this.watch = await this.store.watchMembership({
      upsert: (record) => {
        // A node restarted on another address: its old client's sockets lead nowhere.
        const before = this.membership.get(record.node_id)?.record.address;
        if (before !== undefined && before !== record.address) this.clients.forget(before);
        this.membership.upsert(record);
      },
      remove: (nodeId) => {
        const left = this.membership.get(nodeId);
        this.membership.remove(nodeId);
        if (left) this.clients.forget(left.record.address);
        logger.info({ node: nodeId }, 'node left the cluster');
      },
      connection: (connected) => {
        if (connected !== this.membership.connected) logger.warn(connected ? 'cluster store answers again' : 'cluster store away: routing by the last membership');
        this.membership.connection(connected);
      },
    });
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ port: this.config.port, host: this.config.host, backlog: 4096 }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.server.address() as AddressInfo;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const { path } = splitTarget(req.url ?? '/');
    const metricsPublic = this.config.metricsPublic;
    if (method === 'GET' && path === '/health') {
      const report = gatewayHealth(this.membership);
      return sendJson(res, report.status === 'unhealthy' ? 503 : 200, report);
    }
    // The dashboard of the whole cluster, node by node (public, as /ui and /health are on any broker).
    if (method === 'GET' && serveClusterDashboard(path, res)) return;
    const isMetrics = method === 'GET' && (path === '/metrics' || path === '/cluster/targets');
    if (!(isMetrics && metricsPublic) && !this.authorize(req)) throw new UnauthorizedError();
    if (method === 'GET' && path === '/metrics') {
      const text = await this.metrics.registry.metrics();
      res.writeHead(200, { 'Content-Type': this.metrics.registry.contentType, 'Content-Length': Buffer.byteLength(text) });
      return void res.end(text);
    }
    if (method === 'GET' && path === '/cluster/targets') return sendJson(res, 200, clusterTargets(this.membership));
    if (method === 'POST' && ACQUIRE_PATHS.has(path)) return this.acquire.serve(req, res, path);
    const routed = routedIdOf(path);
    if (routed) return this.forward(this.ownerOf(routed), req, res, routed);
    return this.forward(this.anyNode(), req, res, null);
  }

  /** The node an id names, while it is the incarnation that minted the id. */
  private ownerOf(routed: RoutedId): Member {
    const member = this.membership.get(routed.nodeId);
    if (!member) {
      this.metrics.failed(routed.nodeId, 'lost');
      throw new NodeLostError(routed.id, routed.nodeId, 'has left the cluster');
    }
    if (member.record.incarnation !== routed.incarnation) {
      this.metrics.failed(routed.nodeId, 'lost');
      throw new NodeLostError(routed.id, routed.nodeId, 'restarted since it minted it');
    }
    return member;
  }

  /** A node for a call that names none (the API document, a lifecycle create): a random serving one. */
  private anyNode(): Member {
    const members = this.membership.list();
    const serving = members.filter((m) => m.record.health !== 'unhealthy');
    const from = serving.length > 0 ? serving : members;
    if (from.length === 0) throw new NoNodesError('is registered');
    return from[Math.floor(Math.random() * from.length)];
  }

  private async forward(member: Member, req: IncomingMessage, res: ServerResponse, routed: RoutedId | null): Promise<void> {
    const { node_id: nodeId, address } = member.record;
    const startMs = performance.now();
    const call = { method: req.method ?? 'GET', path: req.url ?? '/', headers: forwardedHeaders(req.headers), body: requestBody(req), signal: clientLeft(res) };
    try {
      await this.clients.relayTo(address, call, res, (status) => this.metrics.answered(nodeId, status, startMs));
    } catch (err) {
      // The client left, or the answer broke after its head was sent: nothing more to say.
      if (res.destroyed || res.headersSent) return void res.destroy();
      // A node that refuses connections died: whatever its ids held is gone with it.
      if (neverSent(err) || (routed && (await refusesConnections(address)))) {
        this.metrics.failed(nodeId, 'not_sent');
        if (routed) throw new NodeLostError(routed.id, nodeId, 'is not listening (it stopped)');
        throw new NoNodesError(`answers (node '${nodeId}' refused the call)`);
      }
      this.metrics.failed(nodeId, 'broken');
      throw new NodeUnreachableError(nodeId, (err as Error).message);
    }
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    this.server.close();
    this.server.closeIdleConnections();
    await this.watch?.close().catch(() => undefined);
    await this.clients.close();
    await this.store.close();
    this.server.closeAllConnections();
  }
}
