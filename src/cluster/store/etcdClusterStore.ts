/**
 * The cluster's store on etcd (ClusterStore). Keys under the cluster's prefix:
 * - `nodes/<node id>`: a node's record (JSON), attached to a lease of its own with the node's TTL,
 *   so a node that dies drops out when the lease runs out;
 * - `placements/<key>`: the node an acquire's request_id went to, on a lease of the placement TTL.
 *
 * Fault handling: the client's own retries and circuit breaker are off. A node's heartbeat and a
 * gateway's placement already retry on their own schedule, and a breaker that holds an endpoint shut
 * for 5 s after the store came back would keep nodes from refreshing their leases in time.
 */
import { Etcd3, EtcdLeaseInvalidError, type IOptions, type Lease, type IKeyValue, type Watcher } from 'etcd3';
import { ExponentialBackoff, noop } from 'cockatiel';
import type { ClusterStore, MembershipListener, MembershipWatch, NodeRecord, NodeRegistration } from '../clusterStore';
import { logger } from '../../common/logger';
import { errorMessage } from '../../common/errors';

/** A unary call to the store that takes longer than this has failed (the store is away). */
const CALL_DEADLINE_MS = 2_000;

export interface EtcdStoreOptions {
  endpoints: string[];
  /** For https endpoints: the CA's and this client's PEM (mutual TLS); absent over http. */
  tls?: { rootCertificate?: Buffer; certChain?: Buffer; privateKey?: Buffer };
  /** Every key of this cluster starts with it (ends with '/'). */
  keyPrefix: string;
}

function withDeadline<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: the store did not answer within ${CALL_DEADLINE_MS} ms`)), CALL_DEADLINE_MS);
    timer.unref();
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function parseRecord(kv: IKeyValue): NodeRecord | null {
  try {
    return JSON.parse(kv.value.toString()) as NodeRecord;
  } catch {
    return null;
  }
}

export class EtcdClusterStore implements ClusterStore {
  private readonly client: Etcd3;
  private readonly nodesPrefix: string;
  private readonly placementsPrefix: string;

  constructor(options: EtcdStoreOptions) {
    this.client = new Etcd3({
      hosts: options.endpoints,
      // No root certificate means the system's roots: grpc's createSsl takes none, though etcd3's type asks for one.
      ...(options.tls ? { credentials: options.tls as IOptions['credentials'] } : {}),
      dialTimeout: CALL_DEADLINE_MS,
      // A watch that lost the store tries again at least every second: gateways see it return soon.
      faultHandling: { host: () => noop, global: noop, watchBackoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 1_000 }).next() },
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + CALL_DEADLINE_MS }),
    });
    const prefix = options.keyPrefix.endsWith('/') ? options.keyPrefix : `${options.keyPrefix}/`;
    this.nodesPrefix = `${prefix}nodes/`;
    this.placementsPrefix = `${prefix}placements/`;
  }

  register(nodeId: string, ttlSeconds: number): NodeRegistration {
    return new EtcdRegistration(this.client, `${this.nodesPrefix}${nodeId}`, ttlSeconds);
  }

  async watchMembership(listener: MembershipListener): Promise<MembershipWatch> {
    const nodeIdOf = (kv: IKeyValue): string => kv.key.toString().slice(this.nodesPrefix.length);
    // The watch starts right after the listing's revision: no change falls between them.
    const listing = await this.client.getAll().prefix(this.nodesPrefix).exec();
    for (const kv of listing.kvs) {
      const record = parseRecord(kv);
      if (record) listener.upsert(record);
    }
    const watcher: Watcher = await this.client
      .watch()
      .prefix(this.nodesPrefix)
      .startRevision(String(Number(listing.header.revision) + 1))
      .create();
    watcher.on('put', (kv) => {
      const record = parseRecord(kv);
      if (record) listener.upsert(record);
    });
    watcher.on('delete', (kv) => listener.remove(nodeIdOf(kv)));
    watcher.on('disconnected', () => listener.connection(false));
    watcher.on('connected', () => listener.connection(true));
    watcher.on('error', (err) => logger.warn({ err: errorMessage(err) }, 'cluster membership watch failed'));
    // A cancel waits for the store's answer: bounded, so a gateway stops while the store is away.
    return { close: () => withDeadline(watcher.cancel(), 'cancelling the membership watch').catch(() => undefined) };
  }

  async placeOnce(key: string, nodeId: string, ttlSeconds: number): Promise<string> {
    const full = `${this.placementsPrefix}${key}`;
    const lease = this.client.lease(ttlSeconds, { autoKeepAlive: false });
    const result = await withDeadline(
      this.client.if(full, 'Create', '==', 0).then(lease.put(full).value(nodeId)).else(this.client.get(full)).commit(),
      'placing a request_id',
    );
    if (result.succeeded) return nodeId;
    const existing = result.responses[0]?.response_range?.kvs[0]?.value.toString();
    // The placement lapsed between the compare and the read: ours is as good as any.
    return existing ?? nodeId;
  }

  async movePlacement(key: string, fromNode: string, toNode: string, ttlSeconds: number): Promise<string> {
    const full = `${this.placementsPrefix}${key}`;
    const lease = this.client.lease(ttlSeconds, { autoKeepAlive: false });
    const result = await withDeadline(
      this.client.if(full, 'Value', '==', fromNode).then(lease.put(full).value(toNode)).else(this.client.get(full)).commit(),
      'moving a request_id',
    );
    if (result.succeeded) return toNode;
    return result.responses[0]?.response_range?.kvs[0]?.value.toString() ?? toNode;
  }

  async close(): Promise<void> {
    this.client.close();
  }
}

/** One node's record under a lease: renewed at every publish, granted anew when the store dropped it. */
class EtcdRegistration implements NodeRegistration {
  private lease: Lease | null = null;
  private closed = false;

  constructor(
    private readonly client: Etcd3,
    private readonly key: string,
    private readonly ttlSeconds: number,
  ) {}

  async publish(record: NodeRecord): Promise<void> {
    if (this.closed) return;
    const lease = (this.lease ??= this.client.lease(this.ttlSeconds, { autoKeepAlive: false }));
    try {
      await withDeadline(lease.grant(), 'granting the node lease');
      await withDeadline(lease.keepaliveOnce(), 'renewing the node lease');
      await withDeadline(lease.put(this.key).value(JSON.stringify(record)).exec(), 'writing the node record');
    } catch (err) {
      // A lease the store expired (it was away longer than the TTL) or never granted is of no more
      // use: the next beat asks for a new one. A timeout alone keeps it: it may still be alive.
      if (err instanceof EtcdLeaseInvalidError || (await lease.grant().then(() => false, () => true))) {
        if (this.lease === lease) this.lease = null;
        void lease.revoke().catch(() => undefined);
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const lease = this.lease;
    this.lease = null;
    // Revoking the lease deletes the record at once: gateways stop placing here before the drain.
    if (lease) await withDeadline(lease.revoke(), 'revoking the node lease').catch(() => undefined);
  }
}
