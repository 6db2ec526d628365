/**
 * A gateway's own series: calls routed to each node (by status), the calls that failed to reach a
 * node, each node's answer latency (to its answer's headers), acquires moved to another node, and the
 * membership it routes by (nodes up, store connected), the acquires it holds waiting, and the rule
 * that placed each acquire by image (warm, held, cold). Nodes are scraped for their own series
 * directly (GET /cluster/targets lists them).
 */
import client, { Registry } from 'prom-client';
import { LATENCY_BUCKETS } from '../../metrics/metrics';
import type { Membership } from './membership';
import type { ImageTier } from './imagePlacement';

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests: client.Counter<'node' | 'status'>;
  private readonly errors: client.Counter<'node' | 'reason'>;
  private readonly latency: client.Histogram<'node'>;
  private readonly acquireRetries: client.Counter;
  private readonly imagePlacements: client.Counter<'tier'>;
  /** Acquires by image placed by each rule since start (/health's `image_placements`). */
  readonly imagePlacementCounts: Record<ImageTier, number> = { warm: 0, held: 0, cold: 0 };
  /** Each node's labelled series, found once: prom-client hashes a label set at every call otherwise. */
  private readonly answeredSeries = new Map<string, { latency: client.Histogram.Internal<'node'>; byStatus: Map<number, client.Counter.Internal> }>();

  constructor(membership: Membership) {
    client.collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.requests = new client.Counter({ name: 'broker_gateway_requests_total', help: 'Calls routed to a node, by the status it answered', labelNames: ['node', 'status'], registers });
    this.errors = new client.Counter({
      name: 'broker_gateway_request_errors_total',
      help: 'Calls that got no answer from their node: not_sent (refused, never reached it), broken (cut after it was sent), lost (the node had left), tls (TLS with the node failed: a certificate refused)',
      labelNames: ['node', 'reason'],
      registers,
    });
    this.latency = new client.Histogram({ name: 'broker_gateway_request_duration_seconds', help: "From a call's forwarding to its node's answer headers", labelNames: ['node'], buckets: LATENCY_BUCKETS, registers });
    this.acquireRetries = new client.Counter({ name: 'broker_gateway_acquire_retries_total', help: 'Acquires sent on to another node (the first was full, draining or down)', registers });
    this.imagePlacements = new client.Counter({
      name: 'broker_gateway_image_placements_total',
      help: 'Acquires by image by the rule that placed them first: warm (a node with its warm sessions), held (a node holding the image), cold (rendezvous over the nodes with room)',
      labelNames: ['tier'],
      registers,
    });
    for (const tier of ['warm', 'held', 'cold'] as const) this.imagePlacements.inc({ tier }, 0);
    new client.Gauge({
      name: 'broker_gateway_nodes_up',
      help: 'Nodes in the membership this gateway routes by, by health',
      labelNames: ['health'],
      registers,
      collect() {
        const counts = { healthy: 0, degraded: 0, unhealthy: 0 };
        for (const m of membership.list()) counts[m.record.health]++;
        for (const [health, n] of Object.entries(counts)) this.set({ health }, n);
      },
    });
    new client.Gauge({
      name: 'broker_gateway_store_connected',
      help: '1 while the membership watch is connected to the store, 0 while the last membership stands',
      registers,
      collect() {
        this.set(membership.connected ? 1 : 0);
      },
    });
  }

  /**
   * broker_gateway_acquires_waiting: the acquires this gateway holds unanswered, by pool, read from
   * `waiting` at each scrape. Each waits in some node's queue; the nodes' own series count them
   * there as well, but only a gateway knows how many of its clients wait across the whole cluster.
   */
  countWaiting(waiting: () => ReadonlyMap<string, number>): void {
    new client.Gauge({
      name: 'broker_gateway_acquires_waiting',
      help: "Acquires this gateway holds unanswered (placed on a node, waiting in its queue, or moving on to another), by pool",
      labelNames: ['pool'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [pool, n] of waiting()) this.set({ pool }, n);
      },
    });
  }

  answered(node: string, status: number, startMs: number): void {
    let series = this.answeredSeries.get(node);
    if (!series) this.answeredSeries.set(node, (series = { latency: this.latency.labels({ node }), byStatus: new Map() }));
    let requests = series.byStatus.get(status);
    if (!requests) series.byStatus.set(status, (requests = this.requests.labels({ node, status: String(status) })));
    requests.inc();
    series.latency.observe((performance.now() - startMs) / 1000);
  }

  failed(node: string, reason: 'not_sent' | 'broken' | 'lost' | 'tls'): void {
    this.errors.inc({ node, reason });
  }

  /** An acquire by image placed, by the rule that chose its first node. */
  imagePlaced(tier: ImageTier): void {
    this.imagePlacementCounts[tier]++;
    this.imagePlacements.inc({ tier });
  }

  retried(): void {
    this.acquireRetries.inc();
  }
}
