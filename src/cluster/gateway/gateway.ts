/**
 * A gateway: no sessions of its own. It serves through the broker's own seam (http/seam.ts: the
 * client's BROKER_TOKEN checked, errors in each API's format) and sends each call where its route's
 * contract says (gatewayRoutes.ts): to the node its id names, placed (acquires: gatewayAcquire.ts;
 * creates: on a node with capacity; warm-ups: gatewayWarmups.ts; either from a snapshot: on its
 * node, snapshotRouting.ts), to every node (lists: gatewayLists.ts), to the home node, or to any
 * node; WebSocket upgrades the same way, tunnelled (nodeTunnel.ts). It answers /health, /metrics,
 * /cluster/targets and the cluster's dashboard itself, from the membership it watches
 * (membership.ts). Any number of gateways serve one cluster: they share nothing but the store.
 */
import { ExponentialBackoff, handleAll, retry } from 'cockatiel';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { BrokerConfig } from '../../config/config';
import { createAuthorize } from '../../http/auth';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendJson } from '../../http/httpJson';
import { HttpSeam } from '../../http/seam';
import type { RouteContract } from '../../http/contract';
import { DEFAULT_POOL } from '../../core/pool/poolRegistry';
import { logger } from '../../common/logger';
import type { ClusterStore, MembershipWatch } from '../clusterStore';
import { ownerOfId, type IdOwner } from '../clusterIds';
import { NodeLostError, NoNodesError, NodeTlsRefusedError, NodeUnreachableError } from '../clusterErrors';
import { loadClusterTls, tlsReason, tlsRefusal } from '../clusterTls';
import { Membership, type Member } from './membership';
import { GatewayAcquire } from './gatewayAcquire';
import { GatewayMetrics } from './gatewayMetrics';
import { clusterTargets, gatewayHealth } from './gatewayHealth';
import { serveList } from './gatewayLists';
import { serveWarmups } from './gatewayWarmups';
import { gatewayRouters, type GatewayHandlers, type Handle, type OneNode } from './gatewayRoutes';
import { placeAcquire } from './placement';
import { imageOfCreate, placeByImage } from './imagePlacement';
import { diedInHandshake, diedListening, forwardedHeaders, neverSent, NodeClients, requestBody, type NodeCall } from './nodeForwarder';
import { tunnelUpgrade } from './nodeTunnel';
import { bySnapshot, type ToSnapshotNode } from './snapshotRouting';
import { UnseenAcquires } from './unseenAcquires';
import { serveClusterDashboard } from '../../api/dashboard/clusterDashboard';
import { HEALTH_CONTRACT } from '../../api/pool/healthContract';
import { DASHBOARD_CONTRACT } from '../../api/dashboard/dashboardContract';
import { CLUSTER_CONTRACT } from '../../api/cluster/clusterContract';

/** How often a gateway asks for the membership at start before it gives up (about 15 s in all). */
const STORE_START_ATTEMPTS = 6;

/** The id a call is routed by, and the node and incarnation it names. */
interface RoutedId extends IdOwner {
  id: string;
}

const NONE: ReadonlySet<string> = new Set();

export class Gateway {
  readonly membership = new Membership();
  readonly metrics = new GatewayMetrics(this.membership);
  readonly server: http.Server;
  readonly seam: HttpSeam;
  /** Open WebSocket tunnels' client sockets: the server no longer tracks upgraded sockets, close() cuts them. */
  private readonly tunnels = new Set<Duplex>();
  private readonly clients: NodeClients;
  /** Mutual TLS to the nodes (BROKER_CLUSTER_CA/CERT/KEY), or null. */
  private readonly tls: ReturnType<typeof loadClusterTls> | null;
  /** Sessions this gateway took on each node (acquires, creates) that its last record does not count. */
  private readonly unseen = new UnseenAcquires();
  private readonly acquire: GatewayAcquire;
  private watch: MembershipWatch | null = null;
  private closePromise: Promise<void> | null = null;

  constructor(
    private readonly config: BrokerConfig,
    private readonly store: ClusterStore,
  ) {
    this.tls = config.cluster.clusterTls ? loadClusterTls(config.cluster.clusterTls) : null;
    this.clients = new NodeClients(config.cluster.clusterToken, this.tls);
    this.acquire = new GatewayAcquire({
      membership: this.membership,
      clients: this.clients,
      store,
      metrics: this.metrics,
      maxBodyBytes: config.maxBodyBytes,
      acquireTimeoutMs: config.acquireTimeoutMs,
      freeTryMs: 2 * config.cluster.heartbeatMs,
      placementTtlSeconds: config.cluster.placementTtlSeconds,
      unseen: this.unseen,
    });
    this.seam = new HttpSeam(gatewayRouters(this.handlers(), { metricsPublic: config.metricsPublic }), {
      authorize: createAuthorize(config.token),
      maxBodyBytes: config.maxBodyBytes,
      // Calls no API's URL space claims, as on a broker.
      defaultErrors: poolErrorFormat,
    });
    this.server = http.createServer({ keepAliveTimeout: 65_000 }, this.seam.serveRequest);
    this.server.on('upgrade', this.seam.serveUpgrade);
    this.server.on('clientError', this.seam.serveClientError);
  }

  /**
   * Watches the membership (the store must answer once, at start), then listens. A store that is
   * slow to answer its first listing (a busy machine, an etcd still electing) is asked again, for up
   * to STORE_START_ATTEMPTS tries with a growing pause, before the gateway gives up.
   */
  async start(): Promise<AddressInfo> {
    this.watch = await retry(handleAll, { maxAttempts: STORE_START_ATTEMPTS - 1, backoff: new ExponentialBackoff({ initialDelay: 250, maxDelay: 4_000 }) })
      .execute(({ attempt }) => {
        if (attempt > 0) logger.warn({ attempt }, 'cluster store did not answer the membership listing: asking again');
        return this.watchOnce();
      });
    this.tls?.watch();
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ port: this.config.port, host: this.config.host, backlog: 4096 }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.server.address() as AddressInfo;
  }

  private watchOnce(): Promise<MembershipWatch> {
    return this.store.watchMembership({
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
  }

  /** Each destination's handler (gatewayRoutes.ts), and the gateway's own answers. */
  private handlers(): GatewayHandlers {
    const own = new Map<RouteContract, Handle>([
      [HEALTH_CONTRACT.routes.health, async ({ res }) => {
        const report = gatewayHealth(this.membership, Date.now(), this.metrics.imagePlacementCounts);
        sendJson(res, report.status === 'unhealthy' ? 503 : 200, report);
      }],
      [HEALTH_CONTRACT.routes.metrics, async ({ res }) => {
        const text = await this.metrics.registry.metrics();
        res.writeHead(200, { 'Content-Type': this.metrics.registry.contentType, 'Content-Length': Buffer.byteLength(text) });
        res.end(text);
      }],
      [CLUSTER_CONTRACT.routes.targets, async ({ res }) => sendJson(res, 200, clusterTargets(this.membership))],
      // The cluster's page and its own assets; a node's dashboard assets (and their 404) from the home node.
      [DASHBOARD_CONTRACT.routes.page, async ({ res }) => void serveClusterDashboard('/ui', res)],
      [DASHBOARD_CONTRACT.routes.asset, async ({ req, res, params }) => {
        if (!serveClusterDashboard(`/ui/dashboard/${params.asset}`, res)) await this.forward(this.homeNode(), req, res, null);
      }],
    ]);
    const toSnapshotNode: ToSnapshotNode = (routed, req, res, body) => this.forward(this.ownerOf(routed), req, res, routed, body);
    return {
      forward: (to, idParam) => ({ req, res, params }) => {
        const { member, routed } = this.destination(to, idParam === null ? null : params[idParam]);
        return this.forward(member, req, res, routed);
      },
      tunnel: (to, idParam) => (req, socket, head, { params }) => this.tunnel(to, idParam === null ? null : params[idParam], req, socket, head),
      acquire: (path) => bySnapshot('snapshot', this.config.maxBodyBytes, toSnapshotNode, (req, res, body) => this.acquire.serve(req, res, path, body)),
      create: () => bySnapshot('snapshotId', this.config.maxBodyBytes, toSnapshotNode, (req, res, body) => this.create(req, res, body)),
      warmImages: () => ({ req, res }) => serveWarmups(req, res, { membership: this.membership, unseen: this.unseen, clients: this.clients, metrics: this.metrics, maxBodyBytes: this.config.maxBodyBytes }),
      list: (kind) => ({ req, res }) => serveList(kind, this.membership.list(), req, res, { clients: this.clients, metrics: this.metrics }),
      own: (contract) => own.get(contract),
    };
  }

  /** A WebSocket: to the node its route names, tunnelled both ways. */
  private async tunnel(to: OneNode, id: string | null, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const { member, routed } = this.destination(to, id);
    const { node_id: nodeId, address } = member.record;
    const startMs = performance.now();
    const cluster = { token: this.config.cluster.clusterToken, tls: this.tls };
    const outcome = await tunnelUpgrade(address, req, socket, head, cluster, (status) => this.metrics.answered(nodeId, status, startMs));
    if (outcome.kind === 'open') {
      if (socket.destroyed) return;
      this.tunnels.add(socket);
      socket.once('close', () => this.tunnels.delete(socket));
      return;
    }
    // A node that died as its handshake went: its ids are lost, as when it takes no connection.
    if (outcome.kind === 'tlsRefused' && !(await diedInHandshake(outcome.err, address))) throw this.refusedTls(nodeId, outcome.err);
    this.metrics.failed(nodeId, 'not_sent');
    if (routed) throw new NodeLostError(routed.id, nodeId, 'is not listening (it stopped)');
    throw new NoNodesError(`answers (node '${nodeId}' refused the call)`);
  }

  /** The node of a call its route sends to one node: the one its id names, the home node, or any. */
  private destination(to: OneNode, id: string | null): { member: Member; routed: RoutedId | null } {
    if (to === 'id' && id !== null) {
      const owner = ownerOfId(id);
      // An id no node minted: any node answers it (its 404).
      if (owner) {
        const routed = { id, ...owner };
        return { member: this.ownerOf(routed), routed };
      }
    }
    return { member: to === 'home' ? this.homeNode() : this.anyNode(), routed: null };
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

  /** A random serving node not in `exclude` (any registered one when none serves), or null. */
  private pickAny(exclude: ReadonlySet<string> = NONE): Member | null {
    const members = this.membership.list().filter((m) => !exclude.has(m.record.node_id));
    const serving = members.filter((m) => m.record.health !== 'unhealthy');
    const from = serving.length > 0 ? serving : members;
    return from.length === 0 ? null : from[Math.floor(Math.random() * from.length)];
  }

  /** A node for a call that names none (the API document, a page): a random serving one. */
  private anyNode(): Member {
    const member = this.pickAny();
    if (!member) throw new NoNodesError('is registered');
    return member;
  }

  /**
   * The home node: the registered node whose id sorts first. Every gateway agrees on it from the
   * membership alone; when it leaves, the next one is home (and what the old one held is gone with it).
   */
  private homeNode(): Member {
    let home: Member | null = null;
    for (const m of this.membership.list()) if (home === null || m.record.node_id < home.record.node_id) home = m;
    if (!home) throw new NoNodesError('is registered');
    return home;
  }

  /**
   * A create (a workspace, a lifecycle sandbox, a task) on a node with capacity (a lifecycle sandbox
   * of an image `image.uri` names: placed by its image, as an acquire by image): the best of 3 random
   * nodes by free sessions of the default pool (placement.ts), less the sessions this gateway took
   * there since the node's last record, as an acquire without a pool; a node that takes no
   * connection gives way to the next. Its body is read whole (bounded by BROKER_MAX_BODY_BYTES),
   * since it may be sent twice.
   */
  private async create(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const image = imageOfCreate(body);
    const tried = new Set<string>();
    for (;;) {
      const nodes = this.membership.list().map((m) => m.record);
      const inFlight = (id: string): number => this.unseen.count(id, this.membership.get(id)?.seenAtMs ?? 0);
      // A lifecycle create of an image: where it is warm, else held, else its rendezvous node (imagePlacement.ts).
      const byImage = image === null ? null : placeByImage({ nodes, image, sessions: 1, spread: false, exclude: tried, inFlight });
      if (byImage && tried.size === 0) this.metrics.imagePlaced(byImage.tier);
      const placed = byImage ?? placeAcquire({ nodes, pool: DEFAULT_POOL, exclude: tried, inFlight });
      const member = (placed && this.membership.get(placed.node.node_id)) ?? this.pickAny(tried);
      if (!member) throw new NoNodesError(tried.size === 0 ? 'is registered' : 'answers (every node refused the call)');
      const nodeId = member.record.node_id;
      tried.add(nodeId);
      this.unseen.begin(nodeId);
      let outcome: 'sent' | 'notSent' = 'notSent';
      try {
        outcome = await this.send(member, req, res, body);
      } finally {
        this.unseen.end(nodeId, outcome === 'sent' && res.statusCode >= 200 && res.statusCode < 300);
      }
      if (outcome === 'sent') return;
    }
  }

  private async forward(member: Member, req: IncomingMessage, res: ServerResponse, routed: RoutedId | null, readWhole?: Buffer): Promise<void> {
    const nodeId = member.record.node_id;
    const body = readWhole ?? (await requestBody(req));
    if (body === undefined) return; // the client left before its body was whole
    if ((await this.send(member, req, res, body, routed !== null)) === 'sent') return;
    // A node that refuses connections died: whatever its ids held is gone with it.
    if (routed) throw new NodeLostError(routed.id, nodeId, 'is not listening (it stopped)');
    throw new NoNodesError(`answers (node '${nodeId}' refused the call)`);
  }

  /**
   * The call to `member`, its answer relayed as it comes. 'notSent' when the node took no connection
   * (`res` untouched); a connection that broke before the answer is a 502, unless `brokenIfRefusing`
   * and the node then refuses connections (it died with what the id held: 'notSent').
   */
  private async send(member: Member, req: IncomingMessage, res: ServerResponse, body: NodeCall['body'], brokenIfRefusing = false): Promise<'sent' | 'notSent'> {
    const { node_id: nodeId, address } = member.record;
    const startMs = performance.now();
    const call = { method: req.method ?? 'GET', path: req.url ?? '/', headers: forwardedHeaders(req.headers), body };
    try {
      await this.clients.relayTo(address, call, res, (status) => this.metrics.answered(nodeId, status, startMs));
      return 'sent';
    } catch (err) {
      // The client left, or the answer broke after its head was sent: nothing more to say.
      if (res.destroyed || res.headersSent) {
        res.destroy();
        return 'sent';
      }
      // A handshake cut by a node that died at that instant is a node that died, not a refusal.
      const tlsFailed = tlsRefusal(err);
      if (tlsFailed && !(await diedInHandshake(err, address))) throw this.refusedTls(nodeId, err);
      if (tlsFailed || neverSent(err) || (brokenIfRefusing && (await diedListening(address)))) {
        this.metrics.failed(nodeId, 'not_sent');
        return 'notSent';
      }
      this.metrics.failed(nodeId, 'broken');
      throw new NodeUnreachableError(nodeId, (err as Error).message);
    }
  }

  /** A TLS failure with a node: the call did not reach it, and the operator must fix a certificate (logged once per call, with the reason). */
  private refusedTls(nodeId: string, err: unknown): NodeTlsRefusedError {
    this.metrics.failed(nodeId, 'tls');
    const reason = tlsReason(err);
    logger.warn({ node: nodeId, err: reason }, 'a call to a node failed its TLS');
    return new NodeTlsRefusedError(nodeId, reason);
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    this.tls?.close();
    this.server.close();
    this.server.closeIdleConnections();
    await this.watch?.close().catch(() => undefined);
    await this.clients.close();
    await this.store.close();
    this.server.closeAllConnections();
    for (const socket of this.tunnels) socket.destroy();
  }
}
